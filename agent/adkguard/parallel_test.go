package adkguard_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/agenttest"
	adkagent "google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

// searchTool is web_search as an ADK function tool running do.
func searchTool(t *testing.T, do func(ctx context.Context, q string) (map[string]any, error)) tool.Tool {
	t.Helper()
	s, err := functiontool.New(functiontool.Config{Name: agenttest.Search, Description: "Search the web (billed)."},
		func(ctx adkagent.Context, in agenttest.SearchArgs) (map[string]any, error) { return do(ctx, in.Q) })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func emailTool(t *testing.T, sc *agenttest.Scenario) tool.Tool {
	t.Helper()
	e, err := functiontool.New(functiontool.Config{Name: agenttest.Email, Description: "Send an email (billed)."},
		func(_ adkagent.Context, in agenttest.EmailArgs) (map[string]any, error) { return sc.EmailRun(in.To) })
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestParallelDuplicates: four identical searches in one model response,
// which ADK runs at once, run once (the tool waits until all four were
// decided, so they overlap), are charged once, and all four function
// responses carry its result. Two identical emails of one response both
// run: a side-effecting call is never coalesced, since sending twice may
// be meant. Only the model is scripted (nextLLM).
func TestParallelDuplicates(t *testing.T) {
	sc := agenttest.NewScenario()
	store := agenttest.NewArrivals()
	g, err := adkguard.New(&adkguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
	if err != nil {
		t.Fatal(err)
	}
	search := searchTool(t, func(_ context.Context, q string) (map[string]any, error) {
		if !store.Wait(4, 10*time.Second) {
			t.Error("the four searches were not decided while the first one ran")
		}
		return sc.SearchRun(q)
	})
	s := func(id string) agenttest.Call {
		return agenttest.Call{ID: id, Tool: agenttest.Search, Args: `{"q":"alpha"}`}
	}
	e := func(id string) agenttest.Call {
		return agenttest.Call{ID: id, Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}
	}
	cfg := llmagent.Config{Name: "assistant", Tools: []tool.Tool{search, emailTool(t, sc)},
		Model: &nextLLM{next: turns([]agenttest.Call{s("p1"), s("p2"), s("p3"), s("p4")}, []agenttest.Call{e("e1"), e("e2")})}}
	rs := responses(run(t, cfg, []*plugin.Plugin{g.Plugin()}, genai.NewContentFromText("go", genai.RoleUser)))
	got := sc.Counts()
	if got[agenttest.Search] != 1 || got[agenttest.Email] != 2 || spent(t, g) != "0.09" || len(rs) != 6 {
		t.Fatalf("executions %v, spent %s, responses %d; want 1 search, 2 emails, 0.09, 6", got, spent(t, g), len(rs))
	}
	for _, r := range rs[:4] {
		if r.Response["q"] != "alpha" || r.Response["execution"] != float64(1) && r.Response["execution"] != 1 {
			t.Fatalf("response %s: %v, want the one search's result", r.ID, r.Response)
		}
	}
	t.Logf("4 parallel identical searches: %d execution; 2 parallel identical emails: %d executions; spent %s", got[agenttest.Search], got[agenttest.Email], spent(t, g))
}

// TestCancelled: a search whose run is cancelled (or whose deadline
// passes) while the tool runs, with an identical search of the same
// response waiting on it, is run once, recorded as a transient failure,
// counted at its estimate (it was started; nothing stays held) and never
// served again: the same search in a later run executes anew. This holds
// whether the tool returns the context's error or a result anyway. Only
// the model is scripted (nextLLM).
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
			g, err := adkguard.New(&adkguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
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
			cfg := llmagent.Config{Name: "assistant", Tools: []tool.Tool{search}, Model: &nextLLM{next: turns([]agenttest.Call{a, b})}}
			ag, err := llmagent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: "preflight-test", Agent: ag, SessionService: session.InMemoryService(),
				AutoCreateSession: true, PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{g.Plugin()}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range r.Run(ctx, "user", "s1", genai.NewContentFromText("go", genai.RoleUser), adkagent.RunConfig{}) {
				if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the run ended with %v", err)
				}
			}
			store.CancelledOnce(t, sc, g.Session().Guard())
			// A later run of the same search: it runs, and its result is new.
			cfg.Model = &nextLLM{next: turns([]agenttest.Call{{ID: "s3", Tool: agenttest.Search, Args: `{"q":"alpha"}`}})}
			rs := responses(run(t, cfg, []*plugin.Plugin{g.Plugin()}, genai.NewContentFromText("again", genai.RoleUser)))
			if n := sc.Counts()[agenttest.Search]; n != 2 || len(rs) != 1 || rs[0].Response["execution"] != float64(2) || spent(t, g) != "0.02" {
				t.Fatalf("the search again: searches %d, responses %v, spent %s; want it run anew (execution 2), 0.02", n, rs, spent(t, g))
			}
		})
	}
}
