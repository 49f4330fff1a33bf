package preflight

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight/internal/jsonv"
)

// bufPool recycles the buffers canonical JSON is written into.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// canonicalWriter builds one RFC 8785 document whose outer members are
// written in canonical order by the caller and whose inner values come from
// parsed trees.
type canonicalWriter struct {
	buf []byte
	err *Error
}

func (w *canonicalWriter) raw(s string) { w.buf = append(w.buf, s...) }

func (w *canonicalWriter) str(s string) {
	w.buf, _ = jsonv.AppendCanonicalString(w.buf, s) // parsed and decoded strings are valid UTF-8
}

// value appends v in canonical form. Numbers are canonical as IEEE-754
// doubles (so 5 and 5.0 hash alike); a number beyond the double range,
// which RFC 8785 cannot represent, is written as it was sent.
func (w *canonicalWriter) value(v jsonv.Value) {
	if w.err != nil {
		return
	}
	out, err := jsonv.AppendCanonical(w.buf, v)
	if err != nil { // only for trees Parse does not build
		w.err = &Error{Code: CodeInvalidRequest, Message: err.Error()}
		return
	}
	w.buf = out
}

// sum returns the hex SHA-256 of the document written so far.
func (w *canonicalWriter) sum() (string, *Error) {
	if w.err != nil {
		return "", w.err
	}
	s := sha256.Sum256(w.buf)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], s[:])
	return string(text[:]), nil
}

func withWriter(f func(w *canonicalWriter)) (string, *Error) {
	bp := bufPool.Get().(*[]byte)
	w := canonicalWriter{buf: (*bp)[:0]}
	f(&w)
	h, err := w.sum()
	*bp = w.buf[:0]
	bufPool.Put(bp)
	return h, err
}

// requestHash computes the requestHash of a check: the canonical form of
// {"request": R, "schema": S}, where R is the proposed request with the
// method upper-cased, header names lower-cased and absent members omitted.
// Economics are not hashed. The members are written in canonical (sorted)
// order: body, headers, method, query, url.
func requestHash(p *parsedCheck) (string, *Error) {
	r := p.request
	return withWriter(func(w *canonicalWriter) {
		w.raw(`{"request":{`)
		sep := ""
		if b, ok := r.Get("body"); ok {
			w.raw(`"body":`)
			w.value(b)
			sep = ","
		}
		if h, ok := r.Get("headers"); ok {
			w.raw(sep + `"headers":{`)
			type header struct{ name, value string }
			hs := make([]header, 0, h.Len())
			for it := h.Iter(); it.Next(); {
				hs = append(hs, header{strings.ToLower(it.Key()), it.Value().Str()})
			}
			slices.SortFunc(hs, func(a, b header) int { return jsonv.CompareKeys(a.name, b.name) })
			for i, hd := range hs {
				if i > 0 {
					w.raw(",")
				}
				w.str(hd.name)
				w.raw(":")
				w.str(hd.value)
			}
			w.raw("}")
			sep = ","
		}
		if m, ok := r.Get("method"); ok {
			w.raw(sep + `"method":`)
			w.str(strings.ToUpper(m.Str()))
			sep = ","
		}
		if q, ok := r.Get("query"); ok {
			w.raw(sep + `"query":`)
			w.value(q)
			sep = ","
		}
		if u, ok := r.Get("url"); ok {
			w.raw(sep + `"url":`)
			w.str(u.Str())
		}
		w.raw(`},"schema":`)
		w.value(p.rawSch)
		w.raw("}")
	})
}

// fingerprintVersion is the version of requestFingerprint; fingerprints of
// other versions never match.
const fingerprintVersion = "2"

// fingerprint computes the v2 requestFingerprint of a proposal: the canonical
// form of {"fingerprintVersion": 2, "provider": P, "operation": O,
// "request": Q} exactly as sent. Only key order and number spelling are
// canonicalized: query case, white space, URL text and array order are kept.
func fingerprint(provider, operation string, payload jsonv.Value) (string, *Error) {
	return withWriter(func(w *canonicalWriter) {
		w.raw(`{"fingerprintVersion":` + fingerprintVersion + `,"operation":`)
		w.str(operation)
		w.raw(`,"provider":`)
		w.str(provider)
		w.raw(`,"request":`)
		w.value(payload)
		w.raw("}")
	})
}
