package preflight

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/strictjson"
)

// writerPool recycles canonical writers and the buffers they write into.
var writerPool = sync.Pool{New: func() any { return &canonicalWriter{buf: make([]byte, 0, 4096)} }}

// canonicalWriter builds one RFC 8785 document whose outer members are
// written in canonical order by the caller and whose inner values come from
// parsed trees.
type canonicalWriter struct {
	buf []byte
	err *Error
}

func (w *canonicalWriter) raw(s string) { w.buf = append(w.buf, s...) }

func (w *canonicalWriter) str(s string) {
	if plainASCII(s) {
		w.buf = append(append(append(w.buf, '"'), s...), '"') // its own RFC 8785 form
		return
	}
	w.buf, _ = strictjson.AppendCanonicalString(w.buf, s) // parsed and decoded strings are valid UTF-8
}

// plainASCII reports whether s is printable ASCII without '"' or '\\',
// which RFC 8785 writes as it is.
func plainASCII[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// value appends v in canonical form. Numbers are canonical as IEEE-754
// doubles (so 5 and 5.0 hash alike); a number beyond the double range,
// which RFC 8785 cannot represent, is written as it was sent.
func (w *canonicalWriter) value(v strictjson.Value) {
	if w.err != nil {
		return
	}
	out, err := strictjson.AppendCanonical(w.buf, v)
	if err != nil { // only for trees Parse does not build
		w.err = &Error{Code: ErrorInvalidRequest, Message: err.Error()}
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

// withWriter runs f on a pooled writer and returns the hash of what f
// wrote. sizeHint is about how many bytes f writes, so that the buffer is
// grown once rather than doubled step by step (the pool is emptied by the
// garbage collector, so a fresh buffer is common under load).
func withWriter(sizeHint int, f func(w *canonicalWriter)) (string, *Error) {
	w := writerPool.Get().(*canonicalWriter)
	if cap(w.buf) < sizeHint {
		w.buf = make([]byte, 0, sizeHint)
	}
	w.buf, w.err = w.buf[:0], nil
	f(w)
	h, err := w.sum()
	w.buf, w.err = w.buf[:0], nil
	writerPool.Put(w)
	return h, err
}

// requestHash computes the requestHash of a check: the canonical form of
// {"request": R, "schema": S}, where R is the proposed request with the
// method upper-cased, header names lower-cased and absent members omitted;
// an empty headers object counts as absent, as it does for a request built
// in Go (whose empty Headers map is not marshaled).
// Economics are not hashed. The members are written in canonical (sorted)
// order: body, headers, method, query, url.
func requestHash(in *checkInput) (string, *Error) {
	size := 64 + rawLen(in.body) + rawLen(in.query) + rawLen(in.rawSch) // canonical text is rarely longer than the text sent
	return withWriter(size, func(w *canonicalWriter) {
		w.raw(`{"request":{`)
		if b := in.body; b.IsValid() {
			w.raw(`"body":`)
			w.value(b)
			w.raw(",")
		}
		if len(in.headers) > 0 { // no headers is no headers, however sent
			w.raw(`"headers":{`)
			writeHeaders(w, in.headers)
			w.raw("},")
		}
		w.raw(`"method":`)
		w.str(strings.ToUpper(in.method))
		if q := in.query; q.IsValid() {
			w.raw(`,"query":`)
			w.value(q)
		}
		w.raw(`,"url":`)
		w.str(in.url)
		w.raw(`},"schema":`)
		if in.cached != nil && in.cached.canon != nil {
			w.buf = append(w.buf, in.cached.canon...)
		} else {
			w.value(in.rawSch)
		}
		w.raw("}")
	})
}

// rawLen is the length of v's text as sent, or 0 when v is absent.
func rawLen(v strictjson.Value) int {
	if !v.IsValid() {
		return 0
	}
	return v.End() - v.Start()
}

// writeHeaders writes the members of the headers object h with the ASCII
// letters of their names in lower case, sorted. HTTP header names are
// case-insensitive in ASCII only (they are tokens), and ASCII case is the
// same in every language, so the hash is reproducible anywhere. A few
// names of plain ASCII (the common case) are lowered, sorted and written
// from a buffer on the stack; otherwise they are lowered into one buffer
// that becomes a single string, so that a request's headers cost one
// allocation, not one per name.
func writeHeaders(w *canonicalWriter, headers []header) {
	if !writePlainHeaders(w, headers) {
		writeAnyHeaders(w, headers)
	}
}

// writeAnyHeaders is writeHeaders for any headers.
func writeAnyHeaders(w *canonicalWriter, headers []header) {
	type lowHeader struct {
		name, value string
		at, end     int // the lowered name is lowered[at:end]
	}
	var local [8]lowHeader
	hs := local[:0]
	var buf [256]byte
	lowered := buf[:0]
	for _, h := range headers {
		at := len(lowered)
		lowered = appendFoldASCII(lowered, h.name)
		hs = append(hs, lowHeader{value: h.value, at: at, end: len(lowered)})
	}
	names := string(lowered)
	for i := range hs {
		hs[i].name = names[hs[i].at:hs[i].end]
	}
	slices.SortFunc(hs, func(a, b lowHeader) int { return strictjson.CompareKeys(a.name, b.name) })
	for i, hd := range hs {
		if i > 0 {
			w.raw(",")
		}
		w.str(hd.name)
		w.raw(":")
		w.str(hd.value)
	}
}

// writePlainHeaders is writeHeaders for at most eight headers whose names
// are plain ASCII and at most 256 bytes together, written from the stack;
// it reports false, having written nothing, for any others. For such
// names byte order is RFC 8785's order (UTF-16 code units).
func writePlainHeaders(w *canonicalWriter, headers []header) bool {
	var buf [256]byte
	var ends [8]uint16
	var order [8]uint8
	if len(headers) > len(ends) {
		return false
	}
	lowered := buf[:0]
	for i, h := range headers {
		if !plainASCII(h.name) || len(lowered)+len(h.name) > len(buf) {
			return false
		}
		lowered = appendFoldASCII(lowered, h.name)
		ends[i], order[i] = uint16(len(lowered)), uint8(i)
	}
	name := func(i uint8) []byte {
		start := uint16(0)
		if i > 0 {
			start = ends[i-1]
		}
		return lowered[start:ends[i]]
	}
	n := len(headers)
	for i := 1; i < n; i++ { // insertion sort: a request has a few headers
		for j := i; j > 0 && bytes.Compare(name(order[j-1]), name(order[j])) > 0; j-- {
			order[j-1], order[j] = order[j], order[j-1]
		}
	}
	for k, i := range order[:n] {
		if k > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(append(append(w.buf, '"'), name(i)...), '"', ':')
		w.str(headers[i].value)
	}
	return true
}

// appendFoldASCII appends s to dst with its ASCII letters in lower case and
// every other byte as it is.
func appendFoldASCII(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// equalFoldASCII reports whether a and b are equal but for the case of
// their ASCII letters.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// fingerprintVersion is the version of requestFingerprint; fingerprints of
// other versions never match.
const fingerprintVersion = "2"

// fingerprint computes the v2 requestFingerprint of a proposal: the canonical
// form of {"fingerprintVersion": 2, "provider": P, "operation": O,
// "request": Q} exactly as sent. Only key order and number spelling are
// canonicalized: query case, white space, URL text and array order are kept.
func fingerprint(provider, operation string, payload strictjson.Value) (string, *Error) {
	return withWriter(96+len(provider)+len(operation)+rawLen(payload), func(w *canonicalWriter) {
		w.raw(`{"fingerprintVersion":` + fingerprintVersion + `,"operation":`)
		w.str(operation)
		w.raw(`,"provider":`)
		w.str(provider)
		w.raw(`,"request":`)
		w.value(payload)
		w.raw("}")
	})
}
