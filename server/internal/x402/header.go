package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxHeaderBytes is the longest header value [DecodeHeader] accepts.
const MaxHeaderBytes = 32 << 10

// EncodeHeader returns the header value for v: padded standard base64
// (RFC 4648 §4, not URL-safe) of v's JSON encoding.
func EncodeHeader(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("x402: encode header: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodeHeader decodes a header value made by [EncodeHeader] into v. It
// accepts only padded standard base64 (no line breaks, no URL-safe alphabet)
// of exactly one JSON object, at most [MaxHeaderBytes] long. Unknown JSON
// members are ignored. It never panics, whatever s holds; the error says what
// was expected and never quotes s.
func DecodeHeader(s string, v any) error {
	if s == "" {
		return errors.New("x402: header is empty")
	}
	if len(s) > MaxHeaderBytes {
		return fmt.Errorf("x402: header is %d bytes, more than the %d allowed", len(s), MaxHeaderBytes)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || bytes.ContainsAny([]byte(s), "\r\n") {
		return errors.New("x402: header is not padded standard base64 (RFC 4648 §4)")
	}
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return errors.New("x402: header does not hold a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("x402: header JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("x402: header JSON has data after the object")
	}
	return nil
}
