package genkitguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/firebase/genkit/go/ai"
	exptool "github.com/firebase/genkit/go/ai/exp/tool"
	"github.com/firebase/genkit/go/genkit"
)

// TestStreamingTool: a tool that streams partial responses
// (ai/exp/tool.SendPartial) during a streaming Generate is guarded like
// any other: it runs once, its partials reach the stream while it runs,
// and the repeat is answered with its saved output (without partials);
// a third search over the budget is not run. Only the model is scripted
// (defineScriptedModel).
func TestStreamingTool(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	sc := agenttest.NewScenario()
	search := genkit.DefineTool(g, agenttest.Search, "Search the web (billed; streams its progress).",
		func(tc *ai.ToolContext, in agenttest.SearchArgs) (map[string]any, error) {
			exptool.SendPartial(tc, map[string]any{"progress": "searching " + in.Q})
			return sc.SearchRun(in.Q)
		})
	guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: "0.015", Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	s := func(id, q string) []agenttest.Call {
		return []agenttest.Call{{ID: id, Tool: agenttest.Search, Args: `{"q":"` + q + `"}`}}
	}
	var read reads
	m := defineScriptedModel(g, "stream", turns(s("a", "alpha"), s("b", "alpha"), s("c", "beta")), read.note)
	var partials []string
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(search), ai.WithUse(guard),
		ai.WithStreaming(func(_ context.Context, c *ai.ModelResponseChunk) error {
			for _, p := range c.Content {
				if p.ToolResponse != nil && p.IsPartial() {
					partials = append(partials, p.ToolResponse.Ref)
				}
			}
			return nil
		}))
	if err != nil || resp.Text() != "done" {
		t.Fatalf("the run ended with %v", err)
	}
	if n := sc.Counts()[agenttest.Search]; n != 1 || len(partials) != 1 || partials[0] != "a" {
		t.Fatalf("searches %d, partials from %v; want 1 search, partials from a", n, partials)
	}
	if read.get("b") != read.get("a") || !strings.Contains(read.get("c"), `"decision":"defer"`) {
		t.Fatalf("read a %s, b %s, c %s; want b the saved a, c deferred", read.get("a"), read.get("b"), read.get("c"))
	}
}
