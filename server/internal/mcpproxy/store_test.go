package mcpproxy

import (
	"context"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxySessionEndDropsResults: sessions share one store, each with
// its own results; a session that ends takes its results with it and
// leaves the other's.
func TestProxySessionEndDropsResults(t *testing.T) {
	up, counts := httpUpstream(t)
	store := tools.NewSharedResultStore(nil)
	g := *mcptest.ScriptGuard()
	g.Results = store
	url, _ := startProxy(t, HTTPDialer(up, nil), g)
	a, b := connect(t, url, "2025-11-25"), connect(t, url, "2025-11-25")
	ctx := context.Background()
	for _, cs := range []*mcp.ClientSession{a, b, b} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"}}); err != nil || res.IsError {
			t.Fatalf("quote: %v %+v", err, res)
		}
	}
	// One result per session; b's repeat was reused, not run.
	if n, _ := store.Len(); n != 2 || counts.Get(mcptest.Quote) != 2 {
		t.Fatalf("store holds %d results after %d runs; want 2 and 2", n, counts.Get(mcptest.Quote))
	}
	a.Close()
	waitFor(t, "the ended session's result to go", func() bool { n, _ := store.Len(); return n == 1 })
}
