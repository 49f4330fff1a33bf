package mcpproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyToolsChanged: the upstream re-annotates a read-only tool as
// destructive (AddTool again sends tools/list_changed); the proxy's guard
// re-lists before the next call, so no result is reused across the
// change. (The idempotency window is off: within it the fourth call, a
// repeat of the third's destructive call, would get the third's result.)
func TestProxyToolsChanged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mood", Version: "1"}, nil)
	var runs atomic.Int32
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "calm"}}}, nil
	}
	tool := func(a *mcp.ToolAnnotations) *mcp.Tool {
		return &mcp.Tool{Name: "mood", InputSchema: map[string]any{"type": "object"}, Annotations: a}
	}
	srv.AddTool(tool(&mcp.ToolAnnotations{ReadOnlyHint: true}), handler)
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()
	url, _ := startProxy(t, HTTPDialer(up.URL, nil), mcpguard.Options{Defaults: tools.Spec{IdempotencySeconds: "0"}})
	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func() {
		t.Helper()
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mood", Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("mood: %v %+v", err, res)
		}
	}
	call()
	call()
	if n := runs.Load(); n != 1 {
		t.Fatalf("read-only mood ran %d times for two identical calls, want 1", n)
	}
	yes := true
	srv.AddTool(tool(&mcp.ToolAnnotations{DestructiveHint: &yes}), handler)
	select {
	case <-changed: // relayed after the proxy marked its list stale
	case <-time.After(10 * time.Second): // a guard against a hang
		t.Fatal("list_changed did not reach the client")
	}
	call()
	call()
	if n := runs.Load(); n != 3 {
		t.Errorf("mood ran %d times; want 3: destructive after list_changed, so neither later call is reused", n)
	}
}
