package mcpproxy

import (
	"encoding/json"
	"testing"
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
