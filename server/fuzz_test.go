package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
