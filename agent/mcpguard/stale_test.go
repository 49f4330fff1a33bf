package mcpguard_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// moodServer serves one tool, mood, read-only until reannotate makes it
// destructive (AddTool again, which sends tools/list_changed).
func moodServer() (srv *mcp.Server, runs *atomic.Int32, reannotate func()) {
	srv = mcp.NewServer(&mcp.Implementation{Name: "mood", Version: "1"}, nil)
	runs = new(atomic.Int32)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "calm"}}}, nil
	}
	yes := true
	tool := func(a *mcp.ToolAnnotations) *mcp.Tool {
		return &mcp.Tool{Name: "mood", InputSchema: map[string]any{"type": "object"}, Annotations: a}
	}
	srv.AddTool(tool(&mcp.ToolAnnotations{ReadOnlyHint: true}), handler)
	return srv, runs, func() { srv.AddTool(tool(&mcp.ToolAnnotations{DestructiveHint: &yes}), handler) }
}

// TestClientMiddlewareToolsChanged: with the middleware also receiving, a
// tool re-annotated as destructive is not reused after list_changed, and
// the client's own ToolListChangedHandler still runs.
func TestClientMiddlewareToolsChanged(t *testing.T) {
	srv, runs, reannotate := moodServer()
	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	mw := mcpguard.Client(nil)
	client.AddSendingMiddleware(mw)
	client.AddReceivingMiddleware(mw)
	cs := connect(t, srv, client, "2025-11-25")
	ctx := context.Background()
	call := func() {
		t.Helper()
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mood", Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("mood: %v %+v", err, res)
		}
	}
	call()
	call()
	if n := runs.Load(); n != 1 {
		t.Fatalf("read-only mood ran %d times for two identical calls, want 1 (the repeat reused)", n)
	}
	reannotate()
	select {
	case <-changed:
	case <-time.After(10 * time.Second): // a guard against a hang
		t.Fatal("the client's ToolListChangedHandler did not run")
	}
	call()
	call()
	if n := runs.Load(); n != 3 {
		t.Errorf("mood ran %d times; want 3: destructive after list_changed, so neither later call is reused", n)
	}
}
