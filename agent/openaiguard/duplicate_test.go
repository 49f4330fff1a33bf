package openaiguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/openaiguard"
	"github.com/openai/openai-go/v3"
)

// TestDuplicates: two tool calls of one response that share an id (a
// provider's bug) are two calls, each run, charged and answered with its
// own result, and two identical read-only calls made in parallel run
// once, in every one of 12 rounds.
func TestDuplicates(t *testing.T) {
	ctx := context.Background()
	for i := range 12 {
		sc := agenttest.NewScenario()
		g, err := openaiguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
		if err != nil {
			t.Fatal(err)
		}
		run := runners(sc)[agenttest.Search]
		call := func(id, q string) openai.ChatCompletionMessageToolCallUnion {
			return openai.ChatCompletionMessageToolCallUnion{ID: id, Type: "function",
				Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: agenttest.Search, Arguments: `{"q":"` + q + `"}`}}
		}
		calls := []openai.ChatCompletionMessageToolCallUnion{call("dup", "alpha"), call("dup", "beta"), call("p1", "gamma"), call("p2", "gamma")}
		read := make([]string, len(calls))
		var wg sync.WaitGroup
		for j, c := range calls {
			wg.Go(func() {
				m := g.Call(ctx, c, func(_ context.Context, args json.RawMessage) (string, error) { return run(args) })
				read[j] = m.OfTool.Content.OfString.Value
			})
		}
		wg.Wait()
		spent, _ := g.Session().Guard().SpentUSD(ctx)
		if n := sc.Counts()[agenttest.Search]; n != 3 || spent != "0.03" {
			t.Fatalf("round %d: searches %d, spent %s; want 3, 0.03", i, n, spent)
		}
		if !strings.Contains(read[0], `"q":"alpha"`) || !strings.Contains(read[1], `"q":"beta"`) || read[2] != read[3] || !strings.Contains(read[2], `"q":"gamma"`) {
			t.Fatalf("round %d: results %q", i, read)
		}
	}
}
