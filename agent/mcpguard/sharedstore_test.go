package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServerMiddlewareFloodKeepsOthersResults: session A saves a read-only
// result; session B floods the store with distinct calls; A's identical
// call is then reused, and the tool's counter shows no second run. The
// shared MemoryStore the proxy used to pass loses A's result instead.
func TestServerMiddlewareFloodKeepsOthersResults(t *testing.T) {
	tests := []struct {
		name  string
		store tools.ResultStore
		want  map[string]int // executions by tool
	}{
		{"shared store", tools.NewSharedResultStore(&tools.SharedResultStoreOptions{MaxEntries: 8, OwnerEntries: 8}), map[string]int{mcptest.Quote: 41}},
		{"one memory store for all", tools.NewMemoryResultStore(8, 0), map[string]int{mcptest.Quote: 42}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			srv, counts := mcptest.NewServer("")
			srv.AddReceivingMiddleware(mcpguard.Server(&mcpguard.Options{Results: tt.store}))
			a := connect(t, srv, newClient(), "2025-11-25")
			b := connect(t, srv, newClient(), "2025-11-25")
			call := func(cs *mcp.ClientSession, sym string) string {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: json.RawMessage(`{"symbol":"` + sym + `"}`)})
				if err != nil || res.IsError {
					t.Fatalf("quote %s: %v %v", sym, err, res)
				}
				return res.Content[0].(*mcp.TextContent).Text
			}
			first := call(a, "ACME")
			for i := range 40 {
				call(b, fmt.Sprintf("B%d", i))
			}
			if again := call(a, "ACME"); tt.want[mcptest.Quote] == 41 && again != first {
				t.Errorf("A's second call answered %s, want the saved %s", again, first)
			}
			if diff := cmp.Diff(tt.want, counts.Snapshot()); diff != "" {
				t.Errorf("executions (-want +got):\n%s", diff)
			}
		})
	}
}
