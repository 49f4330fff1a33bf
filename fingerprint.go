package preflight

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight/internal/jsonv"
)

// bufPool recycles the buffers canonical JSON is written into.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// canonicalHash returns the hex SHA-256 of the RFC 8785 canonical form of v.
// Numbers are canonical as IEEE-754 doubles (so 5 and 5.0 hash alike); a
// number beyond the double range cannot be canonicalized and is reported as
// an invalid_request at its pointer, prefixed with base.
func canonicalHash(v *jsonv.Value, base string) (string, *Error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	out, err := jsonv.AppendCanonical((*bp)[:0], v)
	*bp = out[:0]
	if err != nil {
		var re *jsonv.NumberRangeError
		if errors.As(err, &re) {
			return "", &Error{Code: CodeInvalidRequest, Message: "the request breaks an input rule",
				Details: []Issue{{Path: base + re.Pointer, Code: IssueNumberRange,
					Message: "number " + clip(re.Text) + " is outside the IEEE-754 double range that RFC 8785 canonical JSON can represent"}}}
		}
		return "", &Error{Code: CodeInvalidRequest, Message: err.Error()}
	}
	sum := sha256.Sum256(out)
	return hex.EncodeToString(sum[:]), nil
}

func str(s string) jsonv.Value { return jsonv.Value{Kind: jsonv.String, Str: s} }

// requestHash computes the requestHash of a check: the canonical form of
// {"request": R, "schema": S}, where R is the proposed request with the
// method upper-cased, header names lower-cased and absent members omitted.
// Economics are not hashed.
func requestHash(p *parsedCheck) (string, *Error) {
	r := p.request
	norm := jsonv.Value{Kind: jsonv.Object, Members: make([]jsonv.Member, 0, 5)}
	for _, m := range r.Members {
		switch m.Key {
		case "method":
			m.Value = str(strings.ToUpper(m.Value.Str))
		case "headers":
			h := jsonv.Value{Kind: jsonv.Object, Members: make([]jsonv.Member, len(m.Value.Members))}
			for i, hm := range m.Value.Members {
				h.Members[i] = jsonv.Member{Key: strings.ToLower(hm.Key), Value: hm.Value}
			}
			m.Value = h
		}
		norm.Members = append(norm.Members, m)
	}
	doc := jsonv.Value{Kind: jsonv.Object, Members: []jsonv.Member{
		{Key: "request", Value: norm},
		{Key: "schema", Value: *p.rawSch},
	}}
	return canonicalHash(&doc, "")
}

// fingerprintVersion is the version of requestFingerprint; fingerprints of
// other versions never match.
const fingerprintVersion = "2"

// fingerprint computes the v2 requestFingerprint of a proposal: the canonical
// form of {"fingerprintVersion": 2, "provider": P, "operation": O,
// "request": Q} exactly as sent. Only key order and number spelling are
// canonicalized: query case, white space, URL text and array order are kept.
func fingerprint(provider, operation string, payload *jsonv.Value) (string, *Error) {
	doc := jsonv.Value{Kind: jsonv.Object, Members: []jsonv.Member{
		{Key: "fingerprintVersion", Value: jsonv.Value{Kind: jsonv.Number, Str: fingerprintVersion}},
		{Key: "provider", Value: str(provider)},
		{Key: "operation", Value: str(operation)},
		{Key: "request", Value: *payload},
	}}
	return canonicalHash(&doc, "/tool")
}
