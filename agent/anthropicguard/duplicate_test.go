package anthropicguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/anthropicguard"
	"github.com/anthropics/anthropic-sdk-go/v2"
)

// TestDuplicates: in one response, two tool_use blocks that share an id
// (a provider's bug) are two calls, each run, charged and answered with
// its own result, and two identical read-only calls run once (the runner
// runs them in parallel: one is coalesced with, or reuses, the other), in
// every one of 12 runs of the real runner.
func TestDuplicates(t *testing.T) {
	for i := range 12 {
		sc := agenttest.NewScenario()
		g, err := anthropicguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
		if err != nil {
			t.Fatal(err)
		}
		turns := [][]agenttest.Call{
			{{ID: "dup", Tool: agenttest.Search, Args: `{"q":"alpha"}`}, {ID: "dup", Tool: agenttest.Search, Args: `{"q":"beta"}`}},
			{{ID: "p1", Tool: agenttest.Search, Args: `{"q":"gamma"}`}, {ID: "p2", Tool: agenttest.Search, Args: `{"q":"gamma"}`}},
		}
		var read []string
		cl := client(t, &scriptedModel{next: func() []agenttest.Call {
			if len(turns) == 0 {
				return nil
			}
			c := turns[0]
			turns = turns[1:]
			return c
		}})
		runner := cl.Beta.Messages.NewToolRunner(g.Tools(scenarioTools(t, sc, goError)...), anthropic.BetaToolRunnerParams{
			BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: "scripted", MaxTokens: 1024,
				Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("go"))}},
			DisableThread: true,
		})
		for msg, err := range runner.All(context.Background()) {
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			_ = msg
		}
		for _, m := range runner.Messages() {
			if m.OfUser == nil {
				continue
			}
			for _, b := range m.OfUser.Content {
				if b.OfToolResult != nil {
					for _, c := range b.OfToolResult.Content {
						if c.OfText != nil {
							read = append(read, c.OfText.Text)
						}
					}
				}
			}
		}
		spent, _ := g.Session().Guard().SpentUSD(context.Background())
		if n := sc.Counts()[agenttest.Search]; n != 3 || spent != "0.03" || len(read) != 4 {
			t.Fatalf("run %d: searches %d, spent %s, results %q; want 3, 0.03, 4", i, n, spent, read)
		}
		if !strings.Contains(read[0], `"q":"alpha"`) || !strings.Contains(read[1], `"q":"beta"`) || read[2] != read[3] || !strings.Contains(read[2], `"q":"gamma"`) {
			t.Fatalf("run %d: results %q", i, read)
		}
	}
}
