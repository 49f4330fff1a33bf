package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/server/internal/identity"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scopeUpstream is a stateless go-sdk server with the tools of the scope
// tests, and their execution counts:
//
//   - "send" has an effect (no annotations: destructive by MCP's
//     defaults); with {"wait":true} it runs until release is closed;
//   - "lookup" is read-only and answers with its execution number, so
//     that a result shows which execution made it;
//   - "confirm" asks for a confirmation (an input_required result to a
//     2026-07-28 client) before it answers;
//   - "approve" asks twice, each time with a requestState the retry must
//     carry back, before it answers.
type scopeUpstream struct {
	url                          string
	send, lookup, asks, approves atomic.Int64
	sendStarted, release         chan struct{}
}

func newScopeUpstream(t *testing.T) *scopeUpstream {
	t.Helper()
	u := &scopeUpstream{sendStarted: make(chan struct{}, 16), release: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "scopes", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "send"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		To   string `json:"to"`
		Wait bool   `json:"wait,omitempty"`
	}) (*mcp.CallToolResult, any, error) {
		n := u.send.Add(1)
		u.sendStarted <- struct{}{}
		if in.Wait {
			<-u.release
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("sent to %s (execution %d)", in.To, n)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Q string `json:"q"`
	}) (*mcp.CallToolResult, any, error) {
		n := u.lookup.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: execution %d", in.Q, n)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "confirm"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		What string `json:"what"`
	}) (*mcp.CallToolResult, any, error) {
		u.asks.Add(1)
		if r, ok := req.Params.InputResponses["ok"].(*mcp.ElicitResult); ok && r.Action == "accept" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "confirmed " + in.What}}}, nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"ok": &mcp.ElicitParams{Message: "Go ahead with " + in.What + "?"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "approve"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		What string `json:"what"`
	}) (*mcp.CallToolResult, any, error) {
		u.approves.Add(1)
		ask := func(key, state string) *mcp.CallToolResult {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{key: &mcp.ElicitParams{Message: key + " " + in.What + "?"}},
				RequestState: state}
		}
		switch req.Params.RequestState {
		case "":
			return ask("first", "approve:1:"+in.What), nil, nil
		case "approve:1:" + in.What:
			return ask("second", "approve:2:"+in.What), nil, nil
		case "approve:2:" + in.What:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "approved " + in.What}}}, nil, nil
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "unknown requestState"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	u.url = ts.URL
	return u
}

// asPrincipal serves p with the principal a test names in the
// X-Test-Principal header, as the proxy's authentication will set it.
func asPrincipal(p http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if who := r.Header.Get("X-Test-Principal"); who != "" {
			r = r.WithContext(identity.WithPrincipal(r.Context(), who))
		}
		p.ServeHTTP(w, r)
	})
}

func scopeProxy(t *testing.T, up *scopeUpstream, g mcpguard.Options) (*Proxy, string) {
	t.Helper()
	p := New(Options{Dial: HTTPDialer(up.url, nil), UpstreamURL: up.url, Guard: g})
	px := httptest.NewServer(asPrincipal(p))
	t.Cleanup(func() { p.Close(); px.Close() })
	return p, px.URL
}

// statelessCall sends a 2026-07-28 tools/call as one POST, as principal
// (empty: anonymous) with the run handle run in the Preflight-Run header
// (empty: none), and returns the text of its result.
func statelessCall(t *testing.T, ctx context.Context, url, principal, run string, id int, tool, args string) (string, error) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, id, tool, args)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "X-Test-Principal": principal, RunHeader: run} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if i := bytes.LastIndex(b, []byte("data: ")); i >= 0 { // an event stream: its last event is the response
		b = b[i+len("data: "):]
	}
	var m struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("answer %q: %v", b, err)
	}
	if m.Error != nil {
		return "", fmt.Errorf("JSON-RPC error: %s", m.Error.Message)
	}
	if m.ID != id || len(m.Result.Content) == 0 {
		return "", fmt.Errorf("answer %s: want a result for id %d", b, id)
	}
	return m.Result.Content[0].Text, nil
}

// TestProxyReissueAfterDroppedStream: a stateless client whose stream
// breaks while its call of a tool with an effect runs re-issues the call
// with a new id; the re-issued call joins the one in flight, and one
// re-issued after it ended gets its result: one upstream execution.
func TestProxyReissueAfterDroppedStream(t *testing.T) {
	up := newScopeUpstream(t)
	p, url := scopeProxy(t, up, mcpguard.Options{})
	args := `{"to":"ops","wait":true}`
	ctx, drop := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := statelessCall(t, ctx, url, "", "", 1, "send", args)
		first <- err
	}()
	<-up.sendStarted
	drop() // the stream breaks mid-call
	if err := <-first; err == nil {
		t.Fatal("the dropped call got an answer")
	}
	second := make(chan string, 1)
	go func() {
		text, err := statelessCall(t, context.Background(), url, "", "", 2, "send", args)
		if err != nil {
			t.Error(err)
		}
		second <- text
	}()
	// The first call goes on after its client left; the re-issued one
	// joins it.
	waitFor(t, "both calls in flight in the proxy", func() bool { return p.b.inFlight.Load() == 2 })
	close(up.release)
	want := "sent to ops (execution 1)"
	if got := <-second; got != want {
		t.Fatalf("re-issued call: %q, want %q", got, want)
	}
	got, err := statelessCall(t, context.Background(), url, "", "", 3, "send", args)
	if err != nil || got != want {
		t.Fatalf("call re-issued after the first ended: %q %v, want %q", got, err, want)
	}
	if n := up.send.Load(); n != 1 {
		t.Fatalf("send executed %d times upstream, want 1", n)
	}
}

// TestProxyInputRequiredChargedOnce: the go-sdk client (2026-07-28)
// answers the upstream's input_required result with its elicitation
// handler and retries the call; through the proxy that round trip is one
// call: charged once ($0.25 of the run's budget), one history entry, and
// a call limit of 1 does not stop the retry.
func TestProxyInputRequiredChargedOnce(t *testing.T) {
	up := newScopeUpstream(t)
	p, url := scopeProxy(t, up, mcpguard.Options{BudgetUSD: "1", MaxCalls: 1,
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "confirm"}, PriceUSD: "0.25"}}})
	var asked atomic.Int64
	c := mcp.NewClient(&mcp.Implementation{Name: "mrtr", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{"what": "deploy"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "confirmed deploy" {
		t.Fatalf("confirm: %v %+v", err, res)
	}
	sc := p.existingScope(scopeKey{identity.Anonymous, ""})
	if sc == nil {
		t.Fatal("no scope for the anonymous default run")
	}
	ctx := context.Background()
	spent, _ := sc.guard.Agent().Guard().SpentUSD(ctx)
	hist, _ := sc.guard.Agent().Guard().Ledger().History(ctx)
	if asked.Load() != 1 || up.asks.Load() != 2 || spent != "0.25" || len(hist) != 1 {
		t.Fatalf("%d elicitations, %d upstream runs, spent %s, %d history entries; want 1, 2, 0.25 and 1", asked.Load(), up.asks.Load(), spent, len(hist))
	}
}

// TestProxyRunsAndPrincipalsSeparate: two runs of one principal, and two
// principals, each have their own history and saved results: a read-only
// result one of them saved is reused only by that one; the others run the
// tool themselves. A legacy session naming a run in its POSTs' header
// shares that run with stateless calls naming it.
func TestProxyRunsAndPrincipalsSeparate(t *testing.T) {
	up := newScopeUpstream(t)
	p, url := scopeProxy(t, up, mcpguard.Options{})
	ctx := context.Background()
	steps := []struct {
		principal, run string
		want           string
	}{
		{"alice", "r1", "x: execution 1"},
		{"alice", "r1", "x: execution 1"}, // reused within the run
		{"alice", "r2", "x: execution 2"}, // another run: its own history
		{"bob", "r1", "x: execution 3"},   // another principal, same handle: never alice's result
		{"bob", "", "x: execution 4"},     // bob's default run
		{"alice", "r2", "x: execution 2"},
		{"bob", "r1", "x: execution 3"},
	}
	for i, s := range steps {
		got, err := statelessCall(t, ctx, url, s.principal, s.run, i+1, "lookup", `{"q":"x"}`)
		if err != nil || got != s.want {
			t.Fatalf("step %d (%s, run %q): %q %v, want %q", i+1, s.principal, s.run, got, err, s.want)
		}
	}
	if n := p.Scopes(); n != 4 {
		t.Fatalf("%d scopes, want 4 (alice r1, alice r2, bob r1, bob default)", n)
	}
	for _, k := range []scopeKey{{"alice", "run:r1"}, {"alice", "run:r2"}, {"bob", "run:r1"}, {"bob", ""}} {
		sc := p.existingScope(k)
		if sc == nil {
			t.Fatalf("no scope %v", k)
		}
		hist, _ := sc.guard.Agent().Guard().Ledger().History(ctx)
		if len(hist) != 1 {
			t.Errorf("scope %v: %d history entries, want its own 1", k, len(hist))
		}
	}

	// A legacy session of alice naming run r1 reuses r1's result; without
	// a handle it is a run of its own.
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	hc := &http.Client{Transport: headers{"X-Test-Principal": "alice", RunHeader: "r1"}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"q": "x"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "x: execution 1" {
		t.Fatalf("legacy session in run r1: %v %+v, want r1's saved result", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"q": "x"}, Meta: mcp.Meta{RunMetaKey: "r1"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "x: execution 1" {
		t.Fatalf("legacy session in run r1 by _meta: %v %+v, want r1's saved result", err, res)
	}
	if n := up.lookup.Load(); n != 4 {
		t.Fatalf("lookup executed %d times, want 4", n)
	}
	// Another principal cannot use alice's session.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-Principal", "bob")
	req.Header.Set(sessionHeader, cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("bob using alice's session: HTTP %d, want 404", resp.StatusCode)
	}
}

// headers adds its headers to every request.
type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestRunHandle: where a run handle is read from, and what is refused.
func TestRunHandle(t *testing.T) {
	meta := func(v string) json.RawMessage {
		return json.RawMessage(`{"name":"t","_meta":{"` + RunMetaKey + `":` + v + `}}`)
	}
	for _, tc := range []struct {
		name, header string
		params       json.RawMessage
		want         string
		refused      bool
	}{
		{"none", "", json.RawMessage(`{"name":"t"}`), "", false},
		{"header", "run-7", json.RawMessage(`{"name":"t"}`), "run-7", false},
		{"meta", "", meta(`"run-8"`), "run-8", false},
		{"both agree", "run-8", meta(`"run-8"`), "run-8", false},
		{"both differ", "run-7", meta(`"run-8"`), "", true},
		{"meta not a string", "", meta(`8`), "", true},
		{"space in handle", "a b", json.RawMessage(`{}`), "", true},
		{"too long", strings.Repeat("r", MaxRunHandle+1), json.RawMessage(`{}`), "", true},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(RunHeader, tc.header)
		}
		got, e := runHandle(h, tc.params)
		if got != tc.want || (e != nil) != tc.refused {
			t.Errorf("%s: %q %v; want %q, refused %v", tc.name, got, e, tc.want, tc.refused)
		}
	}
}
