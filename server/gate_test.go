package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestGateBusy fills every evaluation slot and checks that each expensive
// route answers 503 server_busy with Retry-After once its short wait is
// over, and evaluates again when a slot is free.
func TestGateBusy(t *testing.T) {
	h := New(Config{}).(*observer).next.(*handler)
	h.gate.wait = 50 * time.Millisecond
	ts := httptest.NewServer(h)
	defer ts.Close()
	for range cap(h.gate.slots) {
		h.gate.slots <- struct{}{}
	}
	post := func(path, body string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), envelopeCode(b)
	}
	for _, tc := range []struct{ path, body string }{
		{"/check-request", mcpCheckValid},
		{"/v0.2/preflight/tool-call", mcpToolCallAllow},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	} {
		status, retry, code := post(tc.path, tc.body)
		if status != 503 || retry != "1" || code != "server_busy" {
			t.Errorf("%s with every slot taken: status %d, Retry-After %q, code %q; want 503, 1, server_busy", tc.path, status, retry, code)
		}
	}
	<-h.gate.slots
	if status, _, _ := post("/check-request", mcpCheckValid); status != 200 {
		t.Errorf("with a slot free: status %d, want 200", status)
	}
}
