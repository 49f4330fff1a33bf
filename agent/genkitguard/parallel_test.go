package genkitguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// reads keeps the tool outputs a scripted model read, by ref.
type reads struct {
	mu sync.Mutex
	m  map[string]string
}

func (r *reads) note(id string, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]string{}
	}
	r.m[id] = string(b)
}

func (r *reads) get(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

// TestParallelDuplicates: four identical searches in one model response,
// which Genkit runs at once, run once (the tool waits until all four were
// decided, so they overlap), are charged once, and all four tool
// responses carry its result. Two identical emails of one response both
// run: a side-effecting call is never coalesced, since sending twice may
// be meant. Only the model is scripted (defineScriptedModel).
func TestParallelDuplicates(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	sc := agenttest.NewScenario()
	store := agenttest.NewArrivals()
	guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
	if err != nil {
		t.Fatal(err)
	}
	search := genkit.DefineTool(g, agenttest.Search, "Search the web (billed).",
		func(_ *ai.ToolContext, in agenttest.SearchArgs) (map[string]any, error) {
			if !store.Wait(4, 10*time.Second) {
				t.Error("the four searches were not decided while the first one ran")
			}
			return sc.SearchRun(in.Q)
		})
	email := genkit.DefineTool(g, agenttest.Email, "Send an email (billed).",
		func(_ *ai.ToolContext, in agenttest.EmailArgs) (map[string]any, error) { return sc.EmailRun(in.To) })
	s := func(id string) agenttest.Call {
		return agenttest.Call{ID: id, Tool: agenttest.Search, Args: `{"q":"alpha"}`}
	}
	e := func(id string) agenttest.Call {
		return agenttest.Call{ID: id, Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}
	}
	var read reads
	m := defineScriptedModel(g, "parallel", turns([]agenttest.Call{s("p1"), s("p2"), s("p3"), s("p4")}, []agenttest.Call{e("e1"), e("e2")}), read.note)
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(search, email), ai.WithUse(guard))
	if err != nil || resp.Text() != "done" {
		t.Fatalf("the run ended with %v", err)
	}
	got := sc.Counts()
	sp, _ := guard.Session().Guard().SpentUSD(ctx)
	if got[agenttest.Search] != 1 || got[agenttest.Email] != 2 || sp != "0.09" {
		t.Fatalf("executions %v, spent %s; want 1 search, 2 emails, 0.09", got, sp)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(read.get("p1")), &first); err != nil || first["q"] != "alpha" || first["execution"] != float64(1) {
		t.Fatalf("p1 read %q", read.get("p1"))
	}
	for _, id := range []string{"p2", "p3", "p4"} {
		if read.get(id) != read.get("p1") {
			t.Fatalf("%s read %q, want the one search's result %q", id, read.get(id), read.get("p1"))
		}
	}
	t.Logf("4 parallel identical searches: %d execution; 2 parallel identical emails: %d executions; spent %s", got[agenttest.Search], got[agenttest.Email], sp)
}

// TestCancelled: a search whose Generate is cancelled (or whose deadline
// passes) while the tool runs, with an identical search of the same
// response waiting on it, is run once, recorded as a transient failure,
// counted at its estimate (it was started; nothing stays held) and never
// served again: the same search in a later Generate executes anew. This
// holds whether the tool returns the context's error or a result anyway.
// Only the model is scripted (defineScriptedModel).
func TestCancelled(t *testing.T) {
	for i, c := range []struct {
		name     string
		deadline bool
		anyway   bool // the tool returns a result after the context ended
	}{
		{name: "cancelled, the tool returns ctx.Err()"},
		{name: "cancelled, the tool returns a result anyway", anyway: true},
		{name: "deadline, the tool returns ctx.Err()", deadline: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := genkit.Init(context.Background())
			sc := agenttest.NewScenario()
			store := agenttest.NewArrivals()
			guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if c.deadline {
				ctx, cancel = agenttest.Expiring(context.Background())
			}
			defer cancel()
			var started atomic.Bool
			search := genkit.DefineTool(g, agenttest.Search, "Search the web (billed).",
				func(tctx *ai.ToolContext, in agenttest.SearchArgs) (map[string]any, error) {
					res, _ := sc.SearchRun(in.Q)
					if started.Swap(true) {
						return res, nil
					}
					store.Wait(2, 10*time.Second) // the duplicate waits on this call
					cancel()                      // the Generate is cancelled, or its deadline passes
					<-tctx.Done()
					if c.anyway {
						return res, nil
					}
					return nil, tctx.Err()
				})
			a := agenttest.Call{ID: "s1", Tool: agenttest.Search, Args: `{"q":"alpha"}`}
			b := agenttest.Call{ID: "s2", Tool: agenttest.Search, Args: `{"q":"alpha"}`}
			m := defineScriptedModel(g, "cancelled", turns([]agenttest.Call{a, b}), func(string, []byte) {})
			_, err = genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(search), ai.WithUse(guard))
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the Generate ended with %v", err)
			}
			// Genkit returns from a cancelled Generate without waiting for
			// its tools: wait for the call in flight to be settled.
			store.CancelledOnce(t, sc, guard.Session().Guard())
			// A later Generate of the same search: it runs, and its result is new.
			var read reads
			m2 := defineScriptedModel(g, "again"+string(rune('0'+i)), turns([]agenttest.Call{{ID: "s3", Tool: agenttest.Search, Args: `{"q":"alpha"}`}}), read.note)
			resp, err := genkit.Generate(context.Background(), g, ai.WithModel(m2), ai.WithPrompt("again"), ai.WithTools(search), ai.WithUse(guard))
			sp, _ := guard.Session().Guard().SpentUSD(context.Background())
			var res map[string]any
			json.Unmarshal([]byte(read.get("s3")), &res)
			if err != nil || resp.Text() != "done" || sc.Counts()[agenttest.Search] != 2 || res["execution"] != float64(2) || sp != "0.02" {
				t.Fatalf("the search again: %v, searches %d, read %q, spent %s; want it run anew (execution 2), 0.02", err, sc.Counts()[agenttest.Search], read.get("s3"), sp)
			}
		})
	}
}
