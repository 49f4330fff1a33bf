package anthropicguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/anthropicguard"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
)

// runTurns runs tools through the SDK's tool runner (streaming or not)
// until the conversation completes or fails, and returns its error.
func runTurns(ctx context.Context, cl anthropic.Client, streaming bool, tools []anthropic.BetaTool) error {
	params := anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: "scripted", MaxTokens: 1024,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("go"))}},
		DisableThread: true,
	}
	if !streaming {
		_, err := cl.Beta.Messages.NewToolRunner(tools, params).RunToCompletion(ctx)
		return err
	}
	for events, err := range cl.Beta.Messages.NewToolRunnerStreaming(tools, params).AllStreaming(ctx) {
		if err != nil {
			return err
		}
		for _, err := range events {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// TestCancelled: a search whose run is cancelled (or whose deadline
// passes) while the tool runs, through the SDK's tool runner and its
// streaming runner (both run a turn's tools in parallel; only the model
// endpoint is scripted), with an identical search of the same turn
// waiting on it, is run once, recorded as a transient failure, counted at
// its estimate (it was started; nothing stays held) and never served
// again: the same search in a later run executes anew. This holds whether
// the tool returns the context's error or a result anyway.
func TestCancelled(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		runner := "runner"
		if streaming {
			runner = "streaming runner"
		}
		for _, c := range []struct {
			name     string
			deadline bool
			anyway   bool // the tool returns a result after the context ended
		}{
			{name: "cancelled, the tool returns ctx.Err()"},
			{name: "cancelled, the tool returns a result anyway", anyway: true},
			{name: "deadline, the tool returns ctx.Err()", deadline: true},
		} {
			t.Run(runner+", "+c.name, func(t *testing.T) {
				sc := agenttest.NewScenario()
				store := agenttest.NewArrivals()
				g, err := anthropicguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				if c.deadline {
					ctx, cancel = agenttest.Expiring(context.Background())
				}
				defer cancel()
				var started atomic.Bool
				search, err := toolrunner.NewBetaToolFromBytes(agenttest.Search, "Search the web (billed).",
					[]byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
					func(tctx context.Context, in map[string]string) (anthropic.BetaToolResultBlockParamContentUnion, error) {
						res, _ := sc.SearchRun(in["q"])
						b, _ := json.Marshal(res)
						if started.Swap(true) {
							return text(string(b)), nil
						}
						if !store.Wait(2, 10*time.Second) { // the duplicate waits on this call
							t.Error("the duplicate was not decided while the first search ran")
						}
						cancel() // the run is cancelled, or its deadline passes
						<-tctx.Done()
						if c.anyway {
							return text(string(b)), nil
						}
						return anthropic.BetaToolResultBlockParamContentUnion{}, tctx.Err()
					})
				if err != nil {
					t.Fatal(err)
				}
				s := func(id string) agenttest.Call {
					return agenttest.Call{ID: id, Tool: agenttest.Search, Args: `{"q":"alpha"}`}
				}
				cl := client(t, &scriptedModel{next: script([]agenttest.Call{s("s1"), s("s2")})})
				err = runTurns(ctx, cl, streaming, g.Tools(search))
				if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the run ended with %v, want the context's end", err)
				}
				store.CancelledOnce(t, sc, g.Session().Guard())
				// A later run of the same search: it runs, and its result is new.
				read := map[string][]byte{}
				cl = client(t, &scriptedModel{next: script([]agenttest.Call{s("s3")}), result: func(id string, b []byte) { read[id] = b }})
				err = runTurns(context.Background(), cl, streaming, g.Tools(search))
				sp, _ := g.Session().Guard().SpentUSD(context.Background())
				var res map[string]any
				json.Unmarshal(read["s3"], &res)
				if err != nil || sc.Counts()[agenttest.Search] != 2 || res["execution"] != float64(2) || sp != "0.02" {
					t.Fatalf("the search again: %v, searches %d, read %q, spent %s; want it run anew (execution 2), 0.02", err, sc.Counts()[agenttest.Search], read["s3"], sp)
				}
				t.Logf("executions %d, spent %s", sc.Counts()[agenttest.Search], sp)
			})
		}
	}
}

// script returns the next function of a scripted model that plays turns.
func script(turns ...[]agenttest.Call) func() []agenttest.Call {
	return func() []agenttest.Call {
		if len(turns) == 0 {
			return nil
		}
		t := turns[0]
		turns = turns[1:]
		return t
	}
}
