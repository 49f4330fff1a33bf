package mcpproxy

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// closedPortURL returns an MCP URL on a loopback port nothing listens on:
// a port the test held and let go.
func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

// exitingCommand returns a command that exits at once without speaking
// MCP.
func exitingCommand(t *testing.T) Dialer {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh on PATH (%v); it plays an MCP server that exits at once", err)
	}
	return CommandDialer(sh, "-c", "exit 3")
}

// rpcError is the part of a JSON-RPC error response the client relies on.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestProxyUnreachableUpstreamRaw: when the upstream cannot be reached or
// ends before it answers, the initialize request gets 502 with a JSON-RPC
// error carrying its id, promptly, and no session is left behind.
func TestProxyUnreachableUpstreamRaw(t *testing.T) {
	tests := []struct {
		name string
		dial func(t *testing.T) Dialer
	}{
		{"HTTP upstream on a closed port", func(t *testing.T) Dialer { return HTTPDialer(closedPortURL(t), nil) }},
		{"HTTP upstream that answers 404", func(t *testing.T) Dialer {
			ts := httptest.NewServer(http.NotFoundHandler())
			t.Cleanup(ts.Close)
			return HTTPDialer(ts.URL+"/mcp", nil)
		}},
		{"stdio upstream that cannot start", func(t *testing.T) Dialer {
			return CommandDialer(filepath.Join(t.TempDir(), "no-such-server"))
		}},
		{"stdio upstream that exits at once", exitingCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, p := startProxy(t, tt.dial(t), mcpguard.Options{})
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
				`{"jsonrpc":"2.0","id":"init-7","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			// A guard against a hang, not a timing assertion.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			if err != nil {
				t.Fatalf("initialize through the proxy: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			type answer struct {
				Status      int
				ContentType string
				SessionID   string
				Envelope    string
				ID          string
				Code        int
				Prefix      bool
			}
			var e rpcError
			json.Unmarshal(body, &e)
			got := answer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get(sessionHeader),
				e.JSONRPC, string(e.ID), e.Error.Code, strings.HasPrefix(e.Error.Message, "the upstream MCP server is unreachable: ")}
			want := answer{http.StatusBadGateway, "application/json", "", "2.0", `"init-7"`, -32603, true}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("answer to initialize (-want +got):\n%s\nbody: %s", d, body)
			}
			waitFor(t, "no session left", func() bool { return p.Sessions() == 0 })
		})
	}
}

// TestProxyUnreachableUpstreamSDKClient: the official Go SDK client
// connecting through the proxy to an HTTP upstream on a closed port fails
// at once with the proxy's 502, instead of waiting for an answer that never
// comes. (This SDK reads a 502 as transient and reports only its status,
// not the JSON-RPC error in the body; the raw test above checks that.)
func TestProxyUnreachableUpstreamSDKClient(t *testing.T) {
	url, _ := startProxy(t, HTTPDialer(closedPortURL(t), nil), mcpguard.Options{})
	// A guard against a hang, not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "unreachable", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		cs.Close()
		t.Fatal("connected through the proxy to an upstream nobody serves")
	}
	if ctx.Err() != nil || !strings.Contains(err.Error(), "Bad Gateway") {
		t.Fatalf("connect error %q, want the proxy's 502 Bad Gateway", err)
	}
}

// TestProxyUpstreamLostSession: when the upstream forgets the session in
// the middle of a session (it restarted), a tools/call on the direct path
// gets 404 with a JSON-RPC error under its id saying the session ended, as
// any request of a session that is gone does, instead of an empty answer,
// and that the call did not run (the upstream answered 404 to it): it is
// not charged. The client can start another session, which works.
func TestProxyUpstreamLostSession(t *testing.T) {
	newHandler := func() http.Handler {
		srv, _ := mcptest.NewServer("")
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	var h atomic.Pointer[http.Handler]
	first := newHandler()
	h.Store(&first)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(up.Close)
	px, p, records := recordingProxy(t, up.URL, false)
	url := px.URL
	cs := connect(t, url, "2025-11-25")
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	restarted := newHandler() // knows no session
	h.Store(&restarted)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"`+mcptest.Quote+`","arguments":{"symbol":"ACME"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(sessionHeader, cs.ID())
	req.Header.Set(hdrVersion, "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e rpcError
	json.Unmarshal(body, &e)
	if resp.StatusCode != http.StatusNotFound || string(e.ID) != "41" || e.Error.Code != codeInvalidRequest ||
		!strings.Contains(e.Error.Message, "session not found: the session ended while the call was in flight") ||
		!strings.Contains(e.Error.Message, "the call did not run") {
		t.Fatalf("call after the upstream lost the session: %d %q; want 404 and a -32600 error for id 41 saying it did not run", resp.StatusCode, body)
	}
	r := records.last(t, 1)
	if r.ReservedUSD != "" || r.SettledUSD != "" || r.Verdict != "allow" {
		t.Errorf("record of the call: verdict %q, reserved %q, settled %q; want allowed, and no money", r.Verdict, r.ReservedUSD, r.SettledUSD)
	}
	waitFor(t, "the session closed", func() bool { return p.Sessions() == 0 })
	again := connect(t, url, "2025-11-25")
	defer again.Close()
	if res, err := again.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}}); err != nil || res.IsError {
		t.Fatalf("a call in a new session: %v %+v", err, res)
	}
}

// TestProxyInitializeFailsUpstream: an initialize the upstream answers
// with a JSON-RPC error, or not within the call timeout, reaches the
// client as an error, and the session is not kept (nothing can use it).
func TestProxyInitializeFailsUpstream(t *testing.T) {
	// Closed as each case ends, before its upstream closes (which waits
	// for its handlers).
	var testEnded chan struct{}
	// The upstream's requests still open: once the session is closed, the
	// proxy has ended its hanging initialize request.
	var handlers atomic.Int64
	for _, tt := range []struct {
		name, want string
		up         http.HandlerFunc
	}{
		{"refused", "this server takes no such client", func(w http.ResponseWriter, r *http.Request) {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &m)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32602,"message":"this server takes no such client"}}`)
		}},
		{"no answer", "did not answer initialize", func(w http.ResponseWriter, r *http.Request) {
			handlers.Add(1)
			defer handlers.Add(-1)
			// Read as a server reads a request before working on it: only
			// then does net/http see the proxy end the request.
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-testEnded:
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := httptest.NewServer(tt.up)
			t.Cleanup(up.Close)
			ended := make(chan struct{})
			testEnded = ended
			t.Cleanup(func() { close(ended) })
			p := New(Options{Dial: HTTPDialer(up.URL, nil), CallTimeout: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
			px := httptest.NewServer(p)
			t.Cleanup(func() { p.Close(); px.Close() })
			req, _ := http.NewRequest(http.MethodPost, px.URL, strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			// A guard against a hang, not a timing assertion.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), tt.want) {
				t.Errorf("answer to initialize %d %q, want an error saying %q", resp.StatusCode, body, tt.want)
			}
			id := resp.Header.Get(sessionHeader)
			waitFor(t, "the session closed", func() bool { return p.Sessions() == 0 && !p.HasSession(id) })
			waitFor(t, "the upstream requests' end", func() bool { return handlers.Load() == 0 })
		})
	}
}

// TestProxyRequestIDs: a message whose id the SDK's transports would
// answer under another id (a fraction, an exponent, past ±(2^53-1), a
// boolean) is refused with 400 and -32600, under the id as sent when it is
// a number, in a session and without one; an id within the range goes
// through. Two calls with ids past int64 can therefore never share an
// answer's id.
func TestProxyRequestIDs(t *testing.T) {
	up, counts := httpUpstream(t)
	url, _ := startProxy(t, HTTPDialer(up, nil), mcpguard.Options{})
	cs := connect(t, url, "2025-11-25")
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	post := func(session, id string) (int, rpcError) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
			`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+mcptest.Quote+`","arguments":{"symbol":"ID"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set(sessionHeader, session)
			req.Header.Set(hdrVersion, "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e rpcError
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e
	}
	for _, session := range []string{cs.ID(), ""} {
		for _, tt := range []struct{ id, echo string }{
			{`1.5`, `1.5`}, {`1e3`, `1e3`}, {`9007199254740993`, `9007199254740993`},
			{`99999999999999999999999`, `99999999999999999999999`}, {`true`, `null`},
		} {
			status, e := post(session, tt.id)
			if status != http.StatusBadRequest || string(e.ID) != tt.echo || e.Error.Code != codeInvalidRequest ||
				!strings.Contains(e.Error.Message, "a request id must be a string or an integer") {
				t.Errorf("session %q, id %s: %d %+v; want 400 and -32600 under %s", session, tt.id, status, e, tt.echo)
			}
		}
	}
	if n := counts.Get(mcptest.Quote); n != 0 {
		t.Fatalf("%d executions after refused ids, want 0", n)
	}
	// Within the range, in the session: the call runs (read through the
	// SDK's transport, as a 16-digit id is not the direct path's).
	if status, e := post(cs.ID(), `9007199254740991`); status != http.StatusOK || e.Error.Code != 0 || counts.Get(mcptest.Quote) != 1 {
		t.Fatalf("id 9007199254740991: %d %+v after %d executions; want the call run", status, e, counts.Get(mcptest.Quote))
	}
}
