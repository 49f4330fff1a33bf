package mcpproxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyStatelessNotRun: a stateless tools/call the upstream refuses
// itself, before any tool sees it, costs nothing. A stateful MCP Go SDK
// server answers a 2026-07-28 call 400 with an error under its id (the
// revision is not one it supports); a server
// behind authentication answers 401; another answers 400 with a JSON-RPC
// error under the id null, as the TypeScript SDK does for a session it
// lacks; a dial to a closed port is refused. Five such calls at $0.10
// within the script's $0.45 budget: the client gets the error each time,
// the call record says not_run, with the upstream's answer and no money. A call that
// may have run is still charged: a 500 in plain text; a 400 carrying the
// tool's own error (invalid params), a result, or an event stream; a
// redirect whose second request could not be sent.
func TestProxyStatelessNotRun(t *testing.T) {
	srv, _ := mcptest.NewServer("")
	stateful := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(stateful.Close)
	handler := func(status int, contentType, body string) *httptest.Server {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://auth.example/.well-known/oauth-protected-resource"`)
			}
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(ts.Close)
		return ts
	}
	redirect := func(to string) *httptest.Server {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
		}))
		t.Cleanup(ts.Close)
		return ts
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/mcp"
	closed.Close()

	for _, tc := range []struct {
		name    string
		url     string
		charged bool
	}{
		{"stateful SDK server, no session", stateful.URL, false},
		{"401", handler(http.StatusUnauthorized, "application/json", `{"error":"invalid_token"}`).URL, false},
		{"400 with an error under id null", handler(http.StatusBadRequest, "application/json",
			`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`).URL, false},
		{"dial refused", closedURL, false},
		{"500 in plain text", handler(http.StatusInternalServerError, "text/plain", "internal error").URL, true},
		// A tool's own error may come after it did its work, whatever the
		// status; so may a result, or an event stream.
		{"400 with invalid params under the call's id", handler(http.StatusBadRequest, "application/json",
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no such order"}}`).URL, true},
		{"400 with a result", handler(http.StatusBadRequest, "application/json",
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"done"}]}}`).URL, true},
		{"400 event stream", handler(http.StatusBadRequest, "text/event-stream",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,\"message\":\"failed\"}}\n\n").URL, true},
		// The first server had the request before it redirected: the
		// refused dial of the second is no proof that nothing ran.
		{"redirect to a closed port", redirect(closedURL).URL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px, _, records := recordingProxy(t, tc.url, true)
			for i := range 5 {
				call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + mcptest.Quote + `","arguments":{"symbol":"ACME"},` +
					`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
				_, m := postJSON(t, px.URL, call, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": mcptest.Quote})
				if m["id"] != float64(7) || (m["error"] == nil && !tc.charged) {
					t.Fatalf("call %d: %v; want an error under id 7", i, m)
				}
				r := records.last(t, i+1)
				t.Logf("call %d: answer %s, upstream %q (HTTP %d), reserved %q, settled %q, error %q", i, r.Answer, r.Upstream, r.UpstreamHTTPStatus, r.ReservedUSD, r.SettledUSD, r.Error)
				want := map[bool]string{true: AnswerRan, false: AnswerNotRun}[tc.charged]
				if r.Answer != want || r.Upstream == "" || r.Verdict != "allow" {
					t.Errorf("call %d: record %+v; want a call that was forwarded and failed upstream", i, r)
				}
				if tc.charged {
					// The call may have run: an identical one may be
					// blocked now, or withheld as a repeat.
					if r.SettledUSD != "0.1" { // mcptest.QuotePriceUSD, as the ledger writes it
						t.Errorf("settled %q; want the price, %s: the call may have run", r.SettledUSD, mcptest.QuotePriceUSD)
					}
					break
				}
				if r.ReservedUSD != "" || r.SettledUSD != "" {
					t.Errorf("call %d: reserved %q, settled %q; want no money for a call the upstream refused", i, r.ReservedUSD, r.SettledUSD)
				}
			}
		})
	}
}

// recordingProxy serves a proxy, with the script guard, in front of the
// upstream at url (its stateless calls too when stateless), and returns
// its server, the proxy and the records of its calls.
func recordingProxy(t *testing.T, url string, stateless bool) (*httptest.Server, *Proxy, *callRecords) {
	t.Helper()
	records := new(callRecords)
	opts := Options{Dial: HTTPDialer(url, nil), Guard: *mcptest.ScriptGuard(), OnCall: records.onCall}
	if stateless {
		opts.UpstreamURL = url
	}
	p := New(opts)
	px := httptest.NewServer(p)
	t.Cleanup(func() { p.Close(); px.Close() })
	return px, p, records
}

// callRecords collects the records a proxy hands to Options.OnCall.
type callRecords struct {
	mu   sync.Mutex
	recs []CallRecord
}

// onCall is Options.OnCall.
func (c *callRecords) onCall(ctx context.Context, _ CallStart) (context.Context, func(CallRecord)) {
	return ctx, func(r CallRecord) { c.mu.Lock(); c.recs = append(c.recs, r); c.mu.Unlock() }
}

// last returns the last record, which must be the n-th, waiting a while
// for it.
func (c *callRecords) last(t *testing.T, n int) CallRecord {
	t.Helper()
	// A call's record may come just after its client's answer: when the
	// session ends under the call, the client learns it from the closed
	// session before the call's own goroutine has finished.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		got := len(c.recs)
		var r CallRecord
		if got == n {
			r = c.recs[n-1]
		}
		c.mu.Unlock()
		switch {
		case got == n:
			return r
		case got > n || time.Now().After(deadline):
			t.Fatalf("%d call records, want %d", got, n)
		}
	}
}
