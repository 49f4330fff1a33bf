package mcpgoguard_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestCancelled: a search whose caller's context is cancelled (or whose
// deadline passes) while the handler runs, with an identical search
// made at the same time waiting on it, is run once, recorded as a
// transient failure, counted at its estimate (it was started; nothing
// stays held) and never served again: the same search made later
// executes anew. It holds for the server middleware (mcp-go's in-process
// transport hands the caller's context to the handler, as its
// notifications/cancelled does over a wire) and for the guarded client,
// whether the handler returns the context's error or a result anyway.
// Only the model's tool loop is scripted: the two calls of one turn are
// made in parallel, as an agent does.
func TestCancelled(t *testing.T) {
	for _, side := range []string{"server", "client"} {
		for _, c := range []struct {
			name     string
			deadline bool
			anyway   bool // the handler returns a result after the context ended
		}{
			{name: "cancelled, the handler returns ctx.Err()"},
			{name: "cancelled, the handler returns a result anyway", anyway: true},
			{name: "deadline, the handler returns ctx.Err()", deadline: true},
		} {
			t.Run(side+", "+c.name, func(t *testing.T) {
				sc := agenttest.NewScenario()
				store := agenttest.NewArrivals()
				g, err := mcpgoguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				if c.deadline {
					ctx, cancel = agenttest.Expiring(context.Background())
				}
				defer cancel()
				var started atomic.Bool
				srv := server.NewMCPServer("cancel", "1.0.0")
				srv.AddTool(mcp.NewTool(agenttest.Search, mcp.WithString("q", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
					func(hctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						res, _ := sc.SearchRun(req.GetString("q", ""))
						b, _ := json.Marshal(res)
						if started.Swap(true) {
							return mcp.NewToolResultText(string(b)), nil
						}
						if !store.Wait(2, 10*time.Second) { // the duplicate waits on this call
							t.Error("the duplicate was not decided while the first search ran")
						}
						cancel() // the run is cancelled, or its deadline passes
						<-hctx.Done()
						if c.anyway {
							return mcp.NewToolResultText(string(b)), nil
						}
						return nil, hctx.Err()
					})
				var call func(ctx context.Context, id string) (*mcp.CallToolResult, error)
				var session func() *tools.Session
				if side == "server" {
					srv.Use(g.Middleware())
					cl := connect(t, srv)
					call = func(ctx context.Context, _ string) (*mcp.CallToolResult, error) {
						return cl.CallTool(ctx, request(agenttest.Call{Tool: agenttest.Search, Args: `{"q":"alpha"}`}))
					}
					session = func() *tools.Session { return g.Session(g.Sessions()[0]) }
				} else {
					cl := g.Client(connect(t, srv))
					call = func(ctx context.Context, id string) (*mcp.CallToolResult, error) {
						return cl.CallTool(mcpgoguard.WithCallID(ctx, id), request(agenttest.Call{Tool: agenttest.Search, Args: `{"q":"alpha"}`}))
					}
					session = cl.Session
					if _, err := cl.ListTools(context.Background(), mcp.ListToolsRequest{}); err != nil {
						t.Fatal(err)
					}
				}
				var wg sync.WaitGroup
				for _, id := range []string{"s1", "s2"} {
					wg.Go(func() { call(ctx, id) }) // what each returns is the context's end: the run is over
				}
				wg.Wait()
				store.CancelledOnce(t, sc, session().Guard())
				// The same search later: it runs, and its result is new.
				res, err := call(context.Background(), "s3")
				var got map[string]any
				if err == nil {
					json.Unmarshal(modelView(res, nil), &got)
				}
				sp, _ := session().Guard().SpentUSD(context.Background())
				if err != nil || res.IsError || sc.Counts()[agenttest.Search] != 2 || got["execution"] != float64(2) || sp != "0.02" {
					t.Fatalf("the search again: %v, %v, searches %d, spent %s; want it run anew (execution 2), 0.02", res, err, sc.Counts()[agenttest.Search], sp)
				}
				t.Logf("executions %d, spent %s", sc.Counts()[agenttest.Search], sp)
			})
		}
	}
}
