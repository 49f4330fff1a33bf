package langchaingoguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/langchaingoguard"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/tools"
)

// TestRunCancelled: a search whose run is cancelled (or whose deadline
// passes) while the tool runs, through LangChainGo's real executor and
// OpenAIFunctionsAgent (only the model scripted), is run once, recorded
// as a transient failure, counted at its estimate (it was started;
// nothing stays held) and never served again: the same search in a later
// run executes anew. The executor runs a plan's actions one after the
// other, so the identical search planned in the same turn does not wait
// on the first: it finds the run's context done and is not run. This
// holds whether the tool returns the context's error or a result anyway.
func TestRunCancelled(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline bool
		anyway   bool // the tool returns a result after the context ended
	}{
		{name: "cancelled, the tool returns ctx.Err()"},
		{name: "cancelled, the tool returns a result anyway", anyway: true},
		{name: "deadline, the tool returns ctx.Err()", deadline: true},
		{name: "deadline, the tool returns a result anyway", deadline: true, anyway: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			store := agenttest.NewArrivals()
			g, err := langchaingoguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if c.deadline {
				ctx, cancel = agenttest.Expiring(context.Background())
			}
			defer cancel()
			var started atomic.Bool
			search := fn{agenttest.Search, func(tctx context.Context, input string) (string, error) {
				var in map[string]string
				json.Unmarshal([]byte(input), &in)
				res, _ := sc.SearchRun(in["q"])
				b, _ := json.Marshal(res)
				if started.Swap(true) {
					return string(b), nil
				}
				cancel() // the run is cancelled, or its deadline passes
				<-tctx.Done()
				if c.anyway {
					return string(b), nil
				}
				return "", tctx.Err()
			}}
			s := func(id string) []agenttest.Call {
				return []agenttest.Call{{ID: id, Tool: agenttest.Search, Args: `{"q":"alpha"}`}}
			}
			turn := append(s("s1"), s("s2")...)
			ex := agents.NewExecutor(g.Agent(agents.NewOpenAIFunctionsAgent(&scriptedModel{next: script(turn)}, []tools.Tool{search})))
			_, err = chains.Run(ctx, ex, "go")
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the run ended with %v, want the context's error", err)
			}
			store.CancelledOnce(t, sc, g.Session().Guard())
			// A later run of the same search: it runs, and its result is new.
			read := map[string]string{}
			ex = agents.NewExecutor(g.Agent(agents.NewOpenAIFunctionsAgent(&scriptedModel{next: script(s("s3")),
				result: func(id string, b []byte) { read[id] = string(b) }}, []tools.Tool{search})))
			out, err := chains.Run(context.Background(), ex, "again")
			sp, _ := g.Session().Guard().SpentUSD(context.Background())
			var res map[string]any
			json.Unmarshal([]byte(read["s3"]), &res)
			if err != nil || out != "done" || sc.Counts()[agenttest.Search] != 2 || res["execution"] != float64(2) || sp != "0.02" {
				t.Fatalf("the search again: %v, searches %d, read %q, spent %s; want it run anew (execution 2), 0.02", err, sc.Counts()[agenttest.Search], read["s3"], sp)
			}
			t.Logf("executions %d, spent %s", sc.Counts()[agenttest.Search], sp)
		})
	}
}
