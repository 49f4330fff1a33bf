package mcpproxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyBothGenerations runs the counted script session through the
// proxy for each pairing of client and upstream generation: a 2026-07-28
// client (the Go SDK's default, which starts with server/discover) and a
// 2025-11-25 one, in front of a stateless upstream (both generations) and
// a stateful one (initialize only). Every pairing gives the script's exact
// counts; a stateless client in front of the stateless upstream opens no
// session, and one in front of the stateful upstream falls back to
// initialize on the upstream's UnsupportedProtocolVersion answer to its
// server/discover, which the proxy passes on.
func TestProxyBothGenerations(t *testing.T) {
	for _, up := range []struct {
		name      string
		stateless bool
	}{{"stateless upstream", true}, {"stateful upstream", false}} {
		for _, v := range []string{"", "2025-11-25"} {
			client := "2026-07-28 client"
			if v != "" {
				client = v + " client"
			}
			t.Run(up.name+"/"+client, func(t *testing.T) {
				srv, counts := mcptest.NewServer("")
				ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
					&mcp.StreamableHTTPOptions{Stateless: up.stateless}))
				t.Cleanup(ts.Close)
				p := New(Options{Dial: HTTPDialer(ts.URL, nil), UpstreamURL: ts.URL, Guard: *mcptest.ScriptGuard()})
				px := httptest.NewServer(p)
				t.Cleanup(func() { p.Close(); px.Close() })
				cs := connect(t, px.URL, v)
				got := cs.InitializeResult().ProtocolVersion
				wantStateless := v == "" && up.stateless
				if want := map[bool]string{true: "2026-07-28", false: "2025-11-25"}[wantStateless]; got != want {
					t.Fatalf("negotiated %q, want %q", got, want)
				}
				t.Log(mcptest.RunScript(t, cs, counts.Snapshot))
				p.mu.Lock()
				sessions := len(p.sessions)
				var runs []string
				for k := range p.scopes {
					runs = append(runs, strings.SplitN(k.run, ":", 2)[0])
				}
				p.mu.Unlock()
				// One scope either way: a stateless client's calls are the
				// anonymous principal's default run, a session's are its own run.
				wantSessions, wantRun := map[bool]int{true: 0, false: 1}[wantStateless], map[bool]string{true: "", false: "session"}[wantStateless]
				if sessions != wantSessions || len(runs) != 1 || runs[0] != wantRun {
					t.Errorf("%d sessions and scopes %q, want %d and [%q]", sessions, runs, wantSessions, wantRun)
				}
			})
		}
	}
}

// TestProxyStatelessHeaderMismatch: a stateless tools/call whose Mcp-Name
// or Mcp-Method header differs from its body is refused with -32020 and
// HTTP 400 before the guard or the upstream sees it; the same call with
// matching headers runs.
func TestProxyStatelessHeaderMismatch(t *testing.T) {
	px, _, counts := statelessProxy(t)
	call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + mcptest.Quote + `","arguments":{"symbol":"ACME"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	post := func(method, name string) (int, map[string]any) {
		t.Helper()
		return postJSON(t, px.URL, call, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name})
	}
	for _, tt := range []struct{ name, method, tool string }{
		{"Mcp-Name differs", "tools/call", "another_tool"},
		{"Mcp-Method differs", "tools/list", mcptest.Quote},
	} {
		status, m := post(tt.method, tt.tool)
		e, _ := m["error"].(map[string]any)
		if status != http.StatusBadRequest || m["id"] != float64(9) || e["code"] != float64(CodeHeaderMismatch) {
			t.Errorf("%s: %d %v; want 400 and a -32020 error for id 9", tt.name, status, m)
		}
	}
	if n := counts.Get(mcptest.Quote); n != 0 {
		t.Fatalf("%d executions after refused calls, want 0", n)
	}
	if status, m := post("tools/call", mcptest.Quote); status != http.StatusOK || m["result"] == nil || counts.Get(mcptest.Quote) != 1 {
		t.Fatalf("matching headers: %d %v after %d executions; want a result from one execution", status, m, counts.Get(mcptest.Quote))
	}
}

// TestProxyStatelessAmbiguousMessage: a stateless message, which the proxy
// forwards as it came, is refused with -32600 and HTTP 400, and nothing
// runs, when two readers could take it for two messages: a member twice
// (the SDK reads the last, other decoders the first), two member names
// that differ only in case, invalid UTF-8. Without a session, the method
// is read as the SDKs read it, in exact case: a tools/call that also
// carries "Method":"initialize" is not an initialize.
func TestProxyStatelessAmbiguousMessage(t *testing.T) {
	px, p, counts := statelessProxy(t)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	params := func(sym string) string {
		return `{"name":"` + mcptest.Quote + `","arguments":{"symbol":"` + sym + `"},` + meta + `}`
	}
	post := func(body string, stateless bool) (int, map[string]any) {
		t.Helper()
		var h map[string]string
		if stateless {
			h = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": mcptest.Quote}
		}
		return postJSON(t, px.URL, body, h)
	}
	for _, tt := range []struct{ name, body, want string }{
		{"params twice", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params("FIRST") + `,"params":` + params("LAST") + `}`, `duplicate member name "params"`},
		{"method twice", `{"jsonrpc":"2.0","id":7,"method":"ping","method":"tools/call","params":` + params("M") + `}`, `duplicate member name "method"`},
		{"method in two cases", `{"jsonrpc":"2.0","id":7,"method":"tools/call","Method":"ping","params":` + params("C") + `}`, `"method" and "Method" of the object at the top level differ only in case`},
		{"invalid UTF-8 outside params", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"x\":\"\xff\",\"params\":" + params("U") + "}", `UTF-8`},
	} {
		status, m := post(tt.body, true)
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if status != http.StatusBadRequest || m["id"] != float64(7) || e["code"] != float64(codeInvalidRequest) || !strings.Contains(msg, tt.want) {
			t.Errorf("%s: %d %v; want 400 and a -32600 error for id 7 saying %q", tt.name, status, m, tt.want)
		}
	}
	if n := counts.Get(mcptest.Quote); n != 0 {
		t.Fatalf("%d executions after refused messages, want 0", n)
	}
	// No session, no stateless revision: a case variant of "method" does
	// not make a tools/call an initialize.
	status, m := post(`{"jsonrpc":"2.0","id":8,"method":"tools/call","Method":"initialize","params":{"name":"`+mcptest.Quote+`","arguments":{"symbol":"X"}}}`, false)
	e, _ := m["error"].(map[string]any)
	if msg, _ := e["message"].(string); status != http.StatusBadRequest || m["id"] != float64(8) || !strings.Contains(msg, "the first request of a session must be initialize") {
		t.Errorf("tools/call with Method initialize: %d %v; want 400 asking for initialize", status, m)
	}
	p.mu.Lock()
	sessions := len(p.sessions)
	p.mu.Unlock()
	if n := counts.Get(mcptest.Quote); n != 0 || sessions != 0 {
		t.Fatalf("%d executions and %d sessions, want none", n, sessions)
	}
	// The same call, unambiguous, runs.
	if status, m := post(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":`+params("OK")+`}`, true); status != http.StatusOK || m["result"] == nil || counts.Get(mcptest.Quote) != 1 {
		t.Fatalf("unambiguous call: %d %v after %d executions; want a result from one execution", status, m, counts.Get(mcptest.Quote))
	}
}

// postJSON POSTs body to url with the given headers besides the JSON ones
// and returns the status and the answer, which must be one JSON message.
func postJSON(t *testing.T, url, body string, header map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer %q is not one JSON message", b)
	}
	return resp.StatusCode, m
}

// statelessProxy serves a proxy, with the script guard, in front of the
// test tools served statelessly (both generations); it returns the
// proxy's server, the proxy and the upstream's counters.
func statelessProxy(t *testing.T) (*httptest.Server, *Proxy, *mcptest.Counters) {
	t.Helper()
	srv, counts := mcptest.NewServer("")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	p := New(Options{Dial: HTTPDialer(ts.URL, nil), UpstreamURL: ts.URL, Guard: *mcptest.ScriptGuard()})
	px := httptest.NewServer(p)
	t.Cleanup(func() { p.Close(); px.Close() })
	return px, p, counts
}
