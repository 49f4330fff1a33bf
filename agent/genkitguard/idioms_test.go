package genkitguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// defineScenarioTools defines the idiom scenario's four tools; with
// errorsInBand a tool's error is returned as its output {"error": …},
// the way a Genkit tool author keeps a failure from ending the Generate.
func defineScenarioTools(g *genkit.Genkit, sc *agenttest.Scenario, errorsInBand bool) []ai.ToolRef {
	wrap := func(res map[string]any, err error) (map[string]any, error) {
		if err != nil && errorsInBand {
			return map[string]any{"error": err.Error()}, nil
		}
		return res, err
	}
	return []ai.ToolRef{
		genkit.DefineTool(g, agenttest.Search, "Search the web (billed).",
			func(_ *ai.ToolContext, in agenttest.SearchArgs) (map[string]any, error) {
				return wrap(sc.SearchRun(in.Q))
			}),
		genkit.DefineTool(g, agenttest.Email, "Send an email (billed).",
			func(_ *ai.ToolContext, in agenttest.EmailArgs) (map[string]any, error) {
				return wrap(sc.EmailRun(in.To))
			}),
		genkit.DefineTool(g, agenttest.Fetch, "Fetch a page.",
			func(_ *ai.ToolContext, in agenttest.FetchArgs) (map[string]any, error) {
				return wrap(sc.FetchRun(in.URL))
			}),
		genkit.DefineTool(g, agenttest.File, "File a ticket.",
			func(_ *ai.ToolContext, in agenttest.TicketArgs) (map[string]any, error) {
				return wrap(sc.FileRun(in.Title))
			}),
	}
}

// TestIdioms plays the idiom scenario (a priced read-only search, a
// side-effecting email, a fetch that fails with a 503 once, a ticket tool
// that always fails with a 422) through genkit.Generate, only the model
// scripted, with each way a Genkit agent keeps a tool's error from ending
// the run, the guard with no Classify: the tools must run 5 / 2 / 2 / 1
// times in every one.
func TestIdioms(t *testing.T) {
	for _, c := range []struct {
		name   string
		inBand bool
		use    func(guard ai.Middleware) []ai.Middleware
	}{
		{"tools return {error}", true, func(guard ai.Middleware) []ai.Middleware { return []ai.Middleware{guard} }},
		{"ErrorsToModel inside the guard", false, func(guard ai.Middleware) []ai.Middleware {
			return []ai.Middleware{guard, genkitguard.ErrorsToModel()}
		}},
		{"ErrorsToModel outside the guard", false, func(guard ai.Middleware) []ai.Middleware {
			return []ai.Middleware{genkitguard.ErrorsToModel(), guard}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			g := genkit.Init(ctx)
			sc := agenttest.NewScenario()
			m := defineScriptedModel(g, "idioms", sc.Next, sc.Result)
			guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
			if err != nil {
				t.Fatal(err)
			}
			var uses []ai.GenerateOption
			for _, mw := range c.use(guard) {
				uses = append(uses, ai.WithUse(mw))
			}
			opts := append([]ai.GenerateOption{ai.WithModel(m), ai.WithPrompt("go"), ai.WithMaxTurns(50),
				ai.WithTools(defineScenarioTools(g, sc, c.inBand)...)}, uses...)
			resp, err := genkit.Generate(ctx, g, opts...)
			if err != nil {
				t.Fatalf("the run was aborted: %v", err)
			}
			if resp.Text() != "done" {
				t.Fatalf("the run ended with %q (%s)", resp.Text(), resp.FinishReason)
			}
			t.Log(sc.Verify(t, guard.Session().Guard()))
		})
	}
}

// TestDuplicateCallIDs: two tool requests of one model response that
// share a ref (a provider's bug) are two calls, each run, charged and
// answered with its own result, in every one of 12 Generates.
func TestDuplicateCallIDs(t *testing.T) {
	ctx := context.Background()
	for i := range 12 {
		g := genkit.Init(ctx)
		sc := agenttest.NewScenario()
		next := turns([]agenttest.Call{{ID: "dup", Tool: agenttest.Search, Args: `{"q":"alpha"}`}, {ID: "dup", Tool: agenttest.Search, Args: `{"q":"beta"}`}})
		var read []string
		m := defineScriptedModel(g, "dup", next, func(_ string, b []byte) { read = append(read, string(b)) })
		guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(defineScenarioTools(g, sc, false)...), ai.WithUse(guard))
		if err != nil {
			t.Fatalf("the run was aborted: %v", err)
		}
		spent, _ := guard.Session().Guard().SpentUSD(ctx)
		if n := sc.Counts()[agenttest.Search]; resp.Text() != "done" || n != 2 || spent != "0.02" || len(read) != 2 {
			t.Fatalf("run %d: ended %q, searches %d, spent %s, results %q", i, resp.Text(), n, spent, read)
		}
		if !strings.Contains(read[0], `"q":"alpha"`) || !strings.Contains(read[1], `"q":"beta"`) {
			t.Fatalf("run %d: results crossed: %q", i, read)
		}
	}
}
