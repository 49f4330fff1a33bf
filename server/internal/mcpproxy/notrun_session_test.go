package mcpproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxySessionNotRun: in a session, a call whose upstream can no
// longer be reached (its listener closed: every dial is refused) did not
// run, and costs nothing; the call before it, which ran, was charged. So
// for an upstream that gives session ids (the proxy posts each call
// itself) and for a stateless one that gives none (the SDK's transport
// posts it). (A call sent on a connection the upstream had closed
// meanwhile ends in a reset after it was written: that may have run, and
// is charged.)
func TestProxySessionNotRun(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		name := map[bool]string{false: "session ids", true: "stateless upstream"}[stateless]
		t.Run(name, func(t *testing.T) {
			srv, _ := mcptest.NewServer("")
			up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{Stateless: stateless}))
			t.Cleanup(up.Close)
			px, p, records := recordingProxy(t, up.URL, false)
			cs := connect(t, px.URL, "2025-11-25")
			ctx := context.Background()
			calls := 0
			call := func(symbol string) (*mcp.CallToolResult, CallRecord, error) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": symbol}})
				calls++
				return res, records.last(t, calls), err
			}
			if res, r, err := call("ACME"); err != nil || res.IsError || r.SettledUSD != "0.1" {
				t.Fatalf("the call before: %+v, %v, record %+v; want a result charged $0.1", res, err, r)
			}
			if direct := onlySession(t, p).direct(); direct == stateless {
				t.Fatalf("the session's calls posted directly: %v; want %v", direct, !stateless)
			}
			// The listener closes, then every connection (the session's
			// stream among them): no request reaches the upstream any more.
			up.Listener.Close()
			up.CloseClientConnections()
			// And the proxy's idle ones with it: one the proxy had not yet
			// seen closed would carry the call into a reset, which is no
			// refused dial.
			upstreamTransport.(*http.Transport).CloseIdleConnections()
			res, r, err := call("BETA")
			t.Logf("after the upstream closed: %+v, %v; record: answer %s, upstream %q, reserved %q, settled %q, error %q", res, err, r.Answer, r.Upstream, r.ReservedUSD, r.SettledUSD, r.Error)
			if err == nil && !res.IsError {
				t.Fatalf("a call to a closed upstream got a result: %+v", res)
			}
			if r.Answer != AnswerNotRun || r.ReservedUSD != "" || r.SettledUSD != "" {
				t.Errorf("answer %q, reserved %q, settled %q; want not_run and no money for a call no upstream received", r.Answer, r.ReservedUSD, r.SettledUSD)
			}
		})
	}
}

// TestProxySessionRateLimited: in a session, a call the upstream answers
// 429 (Too Many Requests) was refused for its rate and did not run: it
// costs nothing, and the session goes on; the same call, once the
// upstream takes it, runs and is charged.
func TestProxySessionRateLimited(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "session ids", true: "stateless upstream"}[stateless], func(t *testing.T) {
			up, counts, limited := refusingUpstream(t, stateless, func(w http.ResponseWriter) {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "slow down", http.StatusTooManyRequests)
			})
			px, p, records := recordingProxy(t, up, false)
			cs := connect(t, px.URL, "2025-11-25")
			if direct := onlySession(t, p).direct(); direct == stateless {
				t.Fatalf("the session's calls posted directly: %v; want %v", direct, !stateless)
			}
			ctx := context.Background()
			params := &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}}
			limited.Store(true)
			for i := range 5 {
				res, err := cs.CallTool(ctx, params)
				r := records.last(t, i+1)
				if err == nil && !res.IsError {
					t.Fatalf("call %d, answered 429: a result %+v", i, res)
				}
				if r.Answer != AnswerNotRun || r.ReservedUSD != "" || r.SettledUSD != "" {
					t.Errorf("call %d, answered 429: answer %q, reserved %q, settled %q; want not_run and no money", i, r.Answer, r.ReservedUSD, r.SettledUSD)
				}
			}
			limited.Store(false)
			res, err := cs.CallTool(ctx, params)
			if r := records.last(t, 6); err != nil || res.IsError || r.SettledUSD != "0.1" || counts.Get(mcptest.Quote) != 1 {
				t.Fatalf("once the upstream takes it: %+v, %v, settled %q, %d runs; want a result charged $0.1 from one run", res, err, r.SettledUSD, counts.Get(mcptest.Quote))
			}
		})
	}
}

// onlySession returns the proxy's one open session.
func onlySession(t *testing.T, p *Proxy) *session {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.sessions) != 1 {
		t.Fatalf("%d sessions open, want 1", len(p.sessions))
	}
	for _, e := range p.sessions {
		return e.s
	}
	return nil
}

// TestProxySessionDenied: in a session, a call the upstream answers 401
// (Unauthorized) or 403 (Forbidden) was refused before any tool saw it:
// it did not run and costs nothing; the call before it, which ran, was
// charged. So for an upstream that gives session ids and one that does
// not. (The plain-text denial ends the session, as it fails the SDK's
// client connection.)
func TestProxySessionDenied(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		for _, stateless := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/%s", status, map[bool]string{false: "session ids", true: "stateless upstream"}[stateless]), func(t *testing.T) {
				up, counts, denied := refusingUpstream(t, stateless, func(w http.ResponseWriter) {
					w.Header().Set("WWW-Authenticate", `Bearer realm="tools"`)
					http.Error(w, http.StatusText(status), status)
				})
				px, _, records := recordingProxy(t, up, false)
				cs := connect(t, px.URL, "2025-11-25")
				ctx := context.Background()
				if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}}); err != nil || res.IsError || records.last(t, 1).SettledUSD != "0.1" {
					t.Fatalf("the call before: %+v, %v, record %+v; want a result charged $0.1", res, err, records.last(t, 1))
				}
				denied.Store(true)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "BETA"}})
				r := records.last(t, 2)
				if err == nil && !res.IsError {
					t.Fatalf("a call answered %d got a result: %+v", status, res)
				}
				if r.Answer != AnswerNotRun || r.ReservedUSD != "" || r.SettledUSD != "" || counts.Get(mcptest.Quote) != 1 {
					t.Errorf("answered %d: answer %q, reserved %q, settled %q, %d runs; want not_run, no money, the one run before", status, r.Answer, r.ReservedUSD, r.SettledUSD, counts.Get(mcptest.Quote))
				}
			})
		}
	}
}

// TestProxySessionDeniedAfterRedirect: a 401 that answers the redirect of
// a request the upstream ran (it did the work, then answered 307 to a URL
// that refuses) is no refusal of the call: it ran, and is charged. So on
// both paths.
func TestProxySessionDeniedAfterRedirect(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(map[bool]string{false: "session ids", true: "stateless upstream"}[stateless], func(t *testing.T) {
			srv, counts := mcptest.NewServer("")
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
			var redirect atomic.Bool
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/denied" {
					http.Error(w, "Unauthorized", http.StatusUnauthorized)
					return
				}
				b, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(b))
				if redirect.Load() && bytes.Contains(b, []byte(`"tools/call"`)) {
					h.ServeHTTP(httptest.NewRecorder(), r) // the tool runs
					http.Redirect(w, r, "/denied", http.StatusTemporaryRedirect)
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(up.Close)
			px, _, records := recordingProxy(t, up.URL, false)
			cs := connect(t, px.URL, "2025-11-25")
			ctx := context.Background()
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}}); err != nil || res.IsError {
				t.Fatalf("the call before: %+v, %v", res, err)
			}
			redirect.Store(true)
			cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "BETA"}})
			r := records.last(t, 2)
			if counts.Get(mcptest.Quote) != 2 {
				t.Fatalf("%d runs, want 2: the redirected call ran", counts.Get(mcptest.Quote))
			}
			if r.Answer == AnswerNotRun || r.ReservedUSD == "" {
				t.Errorf("a call that ran before its redirect was refused: answer %q, reserved %q, settled %q; want it charged", r.Answer, r.ReservedUSD, r.SettledUSD)
			}
		})
	}
}

// refusingUpstream is an upstream serving mcptest's tools, with session
// ids or stateless, that answers every tools/call with refuse once the
// returned switch is on; it returns its URL and the tools' counters.
func refusingUpstream(t *testing.T, stateless bool, refuse func(http.ResponseWriter)) (string, *mcptest.Counters, *atomic.Bool) {
	t.Helper()
	srv, counts := mcptest.NewServer("")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	on := new(atomic.Bool)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if on.Load() && bytes.Contains(b, []byte(`"tools/call"`)) {
			refuse(w)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	return up.URL, counts, on
}
