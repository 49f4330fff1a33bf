package einoguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// turns returns a script of fixed turns for nextModel.
func turns(ts ...[]agenttest.Call) func() []agenttest.Call {
	var mu atomic.Int32
	return func() []agenttest.Call {
		i := int(mu.Add(1)) - 1
		if i >= len(ts) {
			return nil
		}
		return ts[i]
	}
}

// searchTool is web_search as an eino tool running do.
func searchTool(t *testing.T, do func(ctx context.Context, q string) (map[string]any, error)) tool.BaseTool {
	t.Helper()
	s, err := utils.InferTool(agenttest.Search, "Search the web (billed).", func(ctx context.Context, in agenttest.SearchArgs) (map[string]any, error) {
		return do(ctx, in.Q)
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reactAgent is a real ReAct agent over ts, the guard g its tool
// middleware, the model scripted by next.
func reactAgent(t *testing.T, g *einoguard.Guard, next func() []agenttest.Call, result func(string, []byte), ts ...tool.BaseTool) *react.Agent {
	t.Helper()
	ag, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: &nextModel{next, result},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: ts, ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()}},
		MaxStep:          20,
	})
	if err != nil {
		t.Fatal(err)
	}
	return ag
}

// TestParallelDuplicates: four identical searches in one model turn,
// which eino's ToolsNode runs at once, run once (the tool waits until all
// four were decided, so they overlap), are charged once, and all four
// tool messages carry its result. Two identical emails of one turn both
// run: a side-effecting call is never coalesced, since sending twice may
// be meant. Only the model is scripted (nextModel).
func TestParallelDuplicates(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	store := agenttest.NewArrivals()
	g, err := einoguard.New(&einoguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
	if err != nil {
		t.Fatal(err)
	}
	search := searchTool(t, func(_ context.Context, q string) (map[string]any, error) {
		if !store.Wait(4, 10*time.Second) {
			t.Error("the four searches were not decided while the first one ran")
		}
		return sc.SearchRun(q)
	})
	email, err := utils.InferTool(agenttest.Email, "Send an email (billed).", func(_ context.Context, in agenttest.EmailArgs) (map[string]any, error) {
		return sc.EmailRun(in.To)
	})
	if err != nil {
		t.Fatal(err)
	}
	s := func(id string) agenttest.Call {
		return agenttest.Call{ID: id, Tool: agenttest.Search, Args: `{"q":"alpha"}`}
	}
	e := func(id string) agenttest.Call {
		return agenttest.Call{ID: id, Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}
	}
	read := map[string]string{}
	ag := reactAgent(t, g, turns([]agenttest.Call{s("p1"), s("p2"), s("p3"), s("p4")}, []agenttest.Call{e("e1"), e("e2")}),
		func(id string, b []byte) { read[id] = string(b) }, search, email)
	out, err := ag.Generate(ctx, []*schema.Message{schema.UserMessage("go")})
	if err != nil || out.Content != "done" {
		t.Fatalf("the run ended with %v, %v", out, err)
	}
	got := sc.Counts()
	sp, _ := g.Session().Guard().SpentUSD(ctx)
	if got[agenttest.Search] != 1 || got[agenttest.Email] != 2 || sp != "0.09" {
		t.Fatalf("executions %v, spent %s; want 1 search, 2 emails, 0.09", got, sp)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(read["p1"]), &first); err != nil || first["q"] != "alpha" || first["execution"] != float64(1) {
		t.Fatalf("p1 read %q", read["p1"])
	}
	for _, id := range []string{"p2", "p3", "p4"} {
		if read[id] != read["p1"] {
			t.Fatalf("%s read %q, want the one search's result %q", id, read[id], read["p1"])
		}
	}
	t.Logf("4 parallel identical searches: %d execution; 2 parallel identical emails: %d executions; spent %s", got[agenttest.Search], got[agenttest.Email], sp)
}

// TestCancelled: a search whose run is cancelled (or whose deadline
// passes) while the tool runs, with an identical search of the same turn
// waiting on it, is run once, recorded as a transient failure, counted at
// its estimate (it was started; nothing stays held) and never served
// again: the same search in a later run executes anew. This holds whether
// the tool returns the context's error or a result anyway. Only the model
// is scripted (nextModel).
func TestCancelled(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline bool
		anyway   bool // the tool returns a result after the context ended
	}{
		{name: "cancelled, the tool returns ctx.Err()"},
		{name: "cancelled, the tool returns a result anyway", anyway: true},
		{name: "deadline, the tool returns ctx.Err()", deadline: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			store := agenttest.NewArrivals()
			g, err := einoguard.New(&einoguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if c.deadline {
				ctx, cancel = agenttest.Expiring(context.Background())
			}
			defer cancel()
			var started atomic.Bool
			search := searchTool(t, func(tctx context.Context, q string) (map[string]any, error) {
				res, _ := sc.SearchRun(q)
				if started.Swap(true) {
					return res, nil
				}
				store.Wait(2, 10*time.Second) // the duplicate waits on this call
				cancel()                      // the run is cancelled, or its deadline passes
				<-tctx.Done()
				if c.anyway {
					return res, nil
				}
				return nil, tctx.Err()
			})
			a := agenttest.Call{ID: "s1", Tool: agenttest.Search, Args: `{"q":"alpha"}`}
			b := agenttest.Call{ID: "s2", Tool: agenttest.Search, Args: `{"q":"alpha"}`}
			_, err = reactAgent(t, g, turns([]agenttest.Call{a, b}), nil, search).Generate(ctx, []*schema.Message{schema.UserMessage("go")})
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the run ended with %v", err)
			}
			store.CancelledOnce(t, sc, g.Session().Guard())
			// A later run of the same search: it runs, and its result is new.
			read := map[string]string{}
			out, err := reactAgent(t, g, turns([]agenttest.Call{{ID: "s3", Tool: agenttest.Search, Args: `{"q":"alpha"}`}}),
				func(id string, b []byte) { read[id] = string(b) }, search).Generate(context.Background(), []*schema.Message{schema.UserMessage("again")})
			sp, _ := g.Session().Guard().SpentUSD(context.Background())
			var res map[string]any
			json.Unmarshal([]byte(read["s3"]), &res)
			if err != nil || out.Content != "done" || sc.Counts()[agenttest.Search] != 2 || res["execution"] != float64(2) || sp != "0.02" {
				t.Fatalf("the search again: %v, searches %d, read %q, spent %s; want it run anew (execution 2), 0.02", err, sc.Counts()[agenttest.Search], read["s3"], sp)
			}
		})
	}
}
