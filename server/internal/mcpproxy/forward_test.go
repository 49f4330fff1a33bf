package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyForwardsOtherMessages compares what a client gets directly from
// the upstream server with what it gets through the proxy, for the
// requests the proxy only forwards.
func TestProxyForwardsOtherMessages(t *testing.T) {
	up, _ := httpUpstream(t)
	url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
	direct, proxied := connect(t, up, "2025-11-25"), connect(t, url, "2025-11-25")
	ctx := context.Background()
	steps := []struct {
		name string
		do   func(*mcp.ClientSession) (any, error)
	}{
		{"tools/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListTools(ctx, nil) }},
		{"resources/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListResources(ctx, nil) }},
		{"resources/read", func(cs *mcp.ClientSession) (any, error) {
			return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://readme"})
		}},
		{"prompts/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListPrompts(ctx, nil) }},
		{"prompts/get", func(cs *mcp.ClientSession) (any, error) {
			return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "summarize", Arguments: map[string]string{"id": "7"}})
		}},
		{"ping", func(cs *mcp.ClientSession) (any, error) { return nil, cs.Ping(ctx, nil) }},
		{"unknown tool", func(cs *mcp.ClientSession) (any, error) {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool_at_all", Arguments: map[string]any{}})
			return nil, err
		}},
	}
	for _, s := range steps {
		want, werr := s.do(direct)
		got, gerr := s.do(proxied)
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if d := cmp.Diff(string(wj), string(gj)); d != "" || (werr == nil) != (gerr == nil) {
			t.Errorf("%s: proxied differs from direct (-direct +proxied):\n%s\nerrors: %v / %v", s.name, d, werr, gerr)
		}
	}
}

func TestProxyForwardsProgressAndCancellation(t *testing.T) {
	up, counts := httpUpstream(t)
	url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
	var progress atomic.Int32
	c := mcp.NewClient(&mcp.Implementation{Name: "progress", Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p := &mcp.CallToolParams{Name: mcptest.Countdown, Arguments: map[string]any{"n": 3}}
	p.SetProgressToken("tok-1")
	if res, err := cs.CallTool(context.Background(), p); err != nil || res.IsError {
		t.Fatalf("countdown: %v %+v", err, res)
	}
	waitFor(t, "3 progress notifications", func() bool { return progress.Load() == 3 })

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Countdown, Arguments: map[string]any{"n": 0}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled call: %v", err)
	}
	waitFor(t, "the upstream tool to see the cancellation", func() bool { return counts.Get(mcptest.Countdown+" cancelled") == 1 })
	// The session still works, and the cancelled call was not recorded as
	// a terminal failure: the same call runs again.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	cs.CallTool(ctx2, &mcp.CallToolParams{Name: mcptest.Countdown, Arguments: map[string]any{"n": 0}})
	waitFor(t, "the second cancelled call", func() bool { return counts.Get(mcptest.Countdown+" cancelled") == 2 })
}

func TestProxySessionsAreSeparate(t *testing.T) {
	up, counts := httpUpstream(t)
	url, p := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
	a, b := connect(t, url, "2025-11-25"), connect(t, url, "2025-11-25")
	ctx := context.Background()
	args := map[string]any{"title": "same"}
	for _, cs := range []*mcp.ClientSession{a, a, b, b} {
		cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Ticket, Arguments: args})
	}
	// Each session ran the failing call once and blocked its own retry.
	if n := counts.Get(mcptest.Ticket); n != 2 {
		t.Fatalf("ticket executed %d times, want 2 (once per session)", n)
	}
	if p.Sessions() != 2 {
		t.Fatalf("%d sessions, want 2", p.Sessions())
	}
	a.Close()
	waitFor(t, "the closed session to go", func() bool { return p.Sessions() == 1 })
}

// waitFor polls cond for up to 10 s: a guard against a hang, not a timing
// assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestProxyRelaysServerInitiatedMessages: a notification the upstream
// sends outside any request (tools/list_changed when a tool is added)
// reaches the client, and a call of the new tool is decided with its
// annotations (read-only: the repeat is reused).
func TestProxyRelaysServerInitiatedMessages(t *testing.T) {
	srv, _ := mcptest.NewServer("")
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()
	url, _ := startProxy(t, HTTPDialer(up.URL, nil), *mcptest.ScriptGuard())
	changed := make(chan struct{}, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1.0.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the proxy open the upstream's standalone stream
	var runs atomic.Int32
	srv.AddTool(&mcp.Tool{Name: "late_tool", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
		})
	select {
	case <-changed:
	case <-time.After(10 * time.Second): // a guard against a hang
		t.Fatal("notifications/tools/list_changed did not reach the client")
	}
	for range 2 {
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "late_tool", Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("late_tool: %v %+v", err, res)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("late_tool ran %d times, want 1 (the repeat reused)", n)
	}
}

func TestProxyIdleSessionsEnd(t *testing.T) {
	up, _ := httpUpstream(t)
	p := New(Options{Dial: HTTPDialer(up, nil), IdleTimeout: 200 * time.Millisecond})
	ts := httptest.NewServer(p)
	defer func() { p.Close(); ts.Close() }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "idle", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if p.Sessions() != 1 {
		t.Fatalf("%d sessions", p.Sessions())
	}
	waitFor(t, "the idle session to end", func() bool { return p.Sessions() == 0 })
	if err := cs.Ping(context.Background(), nil); err == nil {
		t.Fatal("a request in the ended session succeeded")
	}
}

func TestProxyRefusesForeignHost(t *testing.T) {
	up, _ := httpUpstream(t)
	url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Host = "evil.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d for a foreign Host on a loopback listener, want 403", resp.StatusCode)
	}
}
