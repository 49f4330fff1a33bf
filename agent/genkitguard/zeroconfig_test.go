package genkitguard_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// TestZeroConfig plays the idiom scenario (tools returning {"error": …})
// with no specs: the guard takes each tool's name and input schema from
// its Genkit definition, so a terminal failure is not retried (the
// ticket runs once) and arguments that break the schema do not run;
// Genkit does not say which tools are read-only, so nothing is reused
// until a spec says so (then 5 / 2 / 2 / 1, with no schema or price
// restated).
func TestZeroConfig(t *testing.T) {
	readOnly := func(name string) tools.Spec {
		return tools.Spec{Operation: preflight.Operation{Name: name, Effects: preflight.EffectsReadOnly}}
	}
	for _, c := range []struct {
		name string
		opts *genkitguard.Options
		want map[string]int
	}{
		{"nil options", nil, map[string]int{agenttest.Search: 7, agenttest.Email: 2, agenttest.Fetch: 3, agenttest.File: 1}},
		{"effects only", &genkitguard.Options{Specs: []tools.Spec{readOnly(agenttest.Search), readOnly(agenttest.Fetch)}},
			agenttest.ScenarioWant()},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			g := genkit.Init(ctx)
			sc := agenttest.NewScenario()
			m := defineScriptedModel(g, "zero", sc.Next, sc.Result)
			guard, err := genkitguard.New(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithMaxTurns(50),
				ai.WithTools(defineScenarioTools(g, sc, true)...), ai.WithUse(guard)); err != nil {
				t.Fatalf("the run was aborted: %v", err)
			}
			if got := sc.Counts(); !maps.Equal(got, c.want) {
				t.Fatalf("executions %v, want %v", got, c.want)
			}
		})
	}
	t.Run("schema", func(t *testing.T) {
		ctx := context.Background()
		g := genkit.Init(ctx)
		sc := agenttest.NewScenario()
		next := turns([]agenttest.Call{{ID: "bad", Tool: agenttest.Search, Args: `{"q":7}`}})
		read := map[string]string{}
		m := defineScriptedModel(g, "zero-schema", next, func(id string, b []byte) { read[id] = string(b) })
		guard, err := genkitguard.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"),
			ai.WithTools(defineScenarioTools(g, sc, true)...), ai.WithUse(guard)); err != nil {
			t.Fatalf("the run was aborted: %v", err)
		}
		if n := sc.Counts()[agenttest.Search]; n != 0 || !strings.Contains(read["bad"], `"INVALID_PAYLOAD"`) {
			t.Fatalf("searches %d, the model read %s; want none run, INVALID_PAYLOAD", n, read["bad"])
		}
	})
}
