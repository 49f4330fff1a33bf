package mcpproxy

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// isErrorCases are results with what encoding/json reads as their
// isError, and whether the scan judges them itself.
var isErrorCases = []struct {
	name    string
	result  string
	want    bool
	scanned bool
}{
	{"plain result", `{"content":[{"type":"text","text":"ok"}]}`, false, true},
	{"tool error", `{"content":[{"type":"text","text":"no"}],"isError":true}`, true, true},
	{"isError false", `{"isError":false,"content":[]}`, false, true},
	{"isError null", ` {"isError":null} `, false, true},
	{"empty object", `{}`, false, true},
	{"nested isError does not count", `{"structuredContent":{"isError":true},"isError":false}`, false, true},
	{"case variant counts", `{"ISERROR":true}`, true, true},
	{"escaped name is decoded", `{"is\u0045rror":true}`, true, false},
	{"long s folds to s", "{\"i\u017fError\":true}", true, false},
	{"last of duplicates wins", `{"isError":true,"isError":false}`, false, false},
	{"string value is no bool", `{"isError":"true"}`, false, false},
	{"not an object", `[true]`, false, false},
	{"invalid JSON", `{"isError":true`, false, false},
	{"trailing data", `{"isError":true} x`, false, false},
	{"empty", ``, false, false},
	{"invalid UTF-8 elsewhere", "{\"text\":\"\xff\",\"isError\":true}", true, false},
}

func TestResultIsError(t *testing.T) {
	for _, c := range isErrorCases {
		t.Run(c.name, func(t *testing.T) {
			if got := resultIsError([]byte(c.result)); got != c.want {
				t.Errorf("resultIsError(%q) = %v, want %v", c.result, got, c.want)
			}
			if got := decodedIsError([]byte(c.result)); got != c.want {
				t.Errorf("encoding/json reads isError of %q as %v; the case says %v", c.result, got, c.want)
			}
			if _, ok := scanIsError([]byte(c.result)); ok != c.scanned {
				t.Errorf("scanIsError(%q) judged it: %v, want %v", c.result, ok, c.scanned)
			}
		})
	}
}

// decodedIsError is isError as encoding/json reads it into a bool field.
func decodedIsError(result []byte) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	json.Unmarshal(result, &r)
	return r.IsError
}

// FuzzResultIsError checks that what the scan judges, encoding/json reads
// the same.
func FuzzResultIsError(f *testing.F) {
	for _, c := range isErrorCases {
		f.Add([]byte(c.result))
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		v, ok := scanIsError(result)
		if !ok {
			return
		}
		if want := decodedIsError(result); v != want {
			t.Fatalf("scanIsError(%q) = %v; encoding/json reads %v", result, v, want)
		}
	})
}

// BenchmarkResultIsError compares the scan of a typical result with the
// decode it replaces.
func BenchmarkResultIsError(b *testing.B) {
	result := []byte(`{"content":[{"type":"text","text":"{\"symbol\":\"S1\",\"price\":101.5,\"currency\":\"USD\"}"}],"structuredContent":{"symbol":"S1","price":101.5,"currency":"USD"}}`)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			resultIsError(result)
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			decodedIsError(result)
		}
	})
}

// headCases are tools/call params with the name encoding/json reads, and
// whether the scan judges them itself.
var headCases = []struct {
	name    string
	params  string
	want    string
	scanned bool
}{
	{"plain call", `{"name":"market_quote","arguments":{"symbol":"S1"}}`, "market_quote", true},
	{"name last", `{"arguments":{"name":"inner"},"name":"t"}`, "t", true},
	{"no name", `{"arguments":{}}`, "", true},
	{"null name", `{"name":null}`, "", true},
	{"empty object", ` {} `, "", true},
	{"_meta is decoded", `{"name":"t","_meta":{"traceparent":"00-x"}}`, "t", false},
	{"case variant of _meta is decoded", `{"name":"t","_META":{}}`, "t", false},
	{"case variant of name", `{"NAME":"t"}`, "t", false},
	{"escaped name", `{"name":"t\u0041"}`, "tA", false},
	{"escaped key", `{"n\u0061me":"t"}`, "t", false},
	{"duplicate name: the last counts", `{"name":"a","name":"b"}`, "b", false},
	{"name not a string", `{"name":1}`, "", false},
	{"not an object", `["name"]`, "", false},
	{"invalid JSON", `{"name":"t"`, "", false},
	{"trailing data", `{"name":"t"}{}`, "", false},
}

func TestReadHead(t *testing.T) {
	for _, c := range headCases {
		t.Run(c.name, func(t *testing.T) {
			if got := readHead([]byte(c.params)).Name; got != c.want {
				t.Errorf("readHead(%q).Name = %q, want %q", c.params, got, c.want)
			}
			if got := decodedHead([]byte(c.params)).Name; got != c.want {
				t.Errorf("encoding/json reads the name of %q as %q; the case says %q", c.params, got, c.want)
			}
			if _, ok := scanHead([]byte(c.params)); ok != c.scanned {
				t.Errorf("scanHead(%q) judged it: %v, want %v", c.params, ok, c.scanned)
			}
		})
	}
}

// decodedHead is the head as encoding/json reads it.
func decodedHead(params []byte) callHead {
	var p callHead
	json.Unmarshal(params, &p)
	return p
}

// FuzzReadHead checks that what the scan judges, encoding/json reads the
// same: the same name, and no _meta.
func FuzzReadHead(f *testing.F) {
	for _, c := range headCases {
		f.Add([]byte(c.params))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		name, ok := scanHead(params)
		if !ok {
			return
		}
		if want := decodedHead(params); name != want.Name || want.Meta != nil {
			t.Fatalf("scanHead(%q) = %q and no _meta; encoding/json reads %q and _meta %v", params, name, want.Name, want.Meta)
		}
	})
}

func TestCallHeadTrace(t *testing.T) {
	h := http.Header{}
	h.Set("traceparent", "00-h")
	h.Set("tracestate", "h=1")
	for _, c := range []struct {
		name   string
		params string
		h      http.Header
		want   map[string]string
	}{
		{"from the headers", `{"name":"t"}`, h, map[string]string{"traceparent": "00-h", "tracestate": "h=1"}},
		{"from _meta before the headers", `{"name":"t","_meta":{"traceparent":"00-m"}}`, h, map[string]string{"traceparent": "00-m"}},
		{"none", `{"name":"t"}`, http.Header{}, nil},
		{"no headers", `{"name":"t"}`, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, readHead([]byte(c.params)).trace(c.h)); diff != "" {
				t.Errorf("trace (-want +got):\n%s", diff)
			}
		})
	}
}
