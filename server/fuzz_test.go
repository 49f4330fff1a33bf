package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzHandler posts arbitrary bodies to both POST routes: every answer must
// be 200, 400 or 413 with a JSON body, and the same body must get the same
// answer twice. Nothing may panic or answer 500.
func FuzzHandler(f *testing.F) {
	for _, s := range []string{checkValid, checkInvalid, checkEcon, toolAllow, toolBlock, toolDefer, toolAdvise, "", "{", "[]", `{"a":1,"a":2}`, nested(20)} {
		f.Add(s, true)
		f.Add(s, false)
	}
	h := New(Config{})
	f.Fuzz(func(t *testing.T, body string, toolRoute bool) {
		path := "/check-request"
		if toolRoute {
			path = "/v0.2/preflight/tool-call"
		}
		serve := func() *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader([]byte(body))))
			return rec
		}
		a, b := serve(), serve()
		switch a.Code {
		case 200, 400, 413:
		default:
			t.Fatalf("status %d: %s", a.Code, a.Body)
		}
		if !json.Valid(a.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %q", a.Body)
		}
		if a.Code != b.Code || !bytes.Equal(a.Body.Bytes(), b.Body.Bytes()) {
			t.Fatalf("answers differ: %d %s / %d %s", a.Code, a.Body, b.Code, b.Body)
		}
	})
}

// FuzzRequestID: whatever a client sends as X-Request-Id, the id used is
// sane (safe in a header and a log line), and a sane one is kept.
func FuzzRequestID(f *testing.F) {
	for _, s := range []string{"", "req-1", "3f1c2a4e-9d7b-4c1e-8a2f-5b6c7d8e9f00", "a b", "x\n{", strings.Repeat("z", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := requestID(in)
		if !saneRequestID(got) {
			t.Fatalf("requestID(%q) = %q, not sane", in, got)
		}
		if saneRequestID(in) && got != in {
			t.Fatalf("requestID(%q) = %q, want the sane input kept", in, got)
		}
	})
}
