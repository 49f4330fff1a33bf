package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight/strictjson"
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
	// The rules of request bodies first: no duplicate member names, valid
	// UTF-8, nothing after the object; then no member whose name differs
	// only in letter case from a field of v (encoding/json would take
	// {"NONCE":...} for "nonce").
	tree, err := strictjson.Parse(raw, strictjson.Limits{MaxDepth: maxHeaderDepth})
	if err != nil {
		var pe *strictjson.Error
		if errors.As(err, &pe) {
			if pe.Kind == strictjson.ErrSyntax && strings.HasPrefix(pe.Msg, "expected end of input") {
				return errors.New("x402: header JSON has data after the object")
			}
			at := ""
			if pe.Pointer != "" {
				at = " at " + pe.Pointer
			}
			return fmt.Errorf("x402: header JSON%s: %s", at, pe.Msg)
		}
		return fmt.Errorf("x402: header JSON: %w", err)
	}
	if err := checkMemberCase(tree, reflect.TypeOf(v), ""); err != nil {
		return fmt.Errorf("x402: %w", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("x402: header JSON: %w", err)
	}
	return nil
}

// maxHeaderDepth bounds the nesting of a header's JSON.
const maxHeaderDepth = 32

// checkMemberCase rejects an object member of val whose name matches a
// field of t (a struct, through pointers) only when letter case is
// ignored, and checks the members that match exactly against their
// fields' types. at is the JSON Pointer of val.
func checkMemberCase(val strictjson.Value, t reflect.Type, at string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || val.Kind() != strictjson.Object {
		if t != nil && t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 && val.Kind() == strictjson.Array {
			for it := val.Iter(); it.Next(); {
				if err := checkMemberCase(it.Value(), t.Elem(), at+"/"+strconv.Itoa(it.Index())); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for it := val.Iter(); it.Next(); {
		key := it.Key()
		var fold *reflect.StructField
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == key {
				fold = nil
				if err := checkMemberCase(it.Value(), f.Type, at+"/"+strictjson.EscapePointerToken(key)); err != nil {
					return err
				}
				break
			}
			if strings.EqualFold(name, key) {
				fold = &f
			}
		}
		if fold != nil {
			name, _, _ := strings.Cut(fold.Tag.Get("json"), ",")
			return caseError(at+"/"+strictjson.EscapePointerToken(key), name)
		}
	}
	return nil
}
