package adkguard_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/tools"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/genai"
)

// TestZeroConfig plays the idiom scenario with no specs: the guard takes
// each tool's name and input schema from its ADK declaration, so a
// terminal failure is not retried (the ticket runs once); the frameworks
// do not say which tools are read-only, so nothing is reused until a
// spec says so (then 5 / 2 / 2 / 1, with no schema or price restated).
func TestZeroConfig(t *testing.T) {
	readOnly := func(name string) tools.Spec {
		return tools.Spec{Operation: preflight.Operation{Name: name, Effects: preflight.EffectsReadOnly}}
	}
	for _, c := range []struct {
		name string
		opts *adkguard.Options
		want map[string]int
	}{
		{"nil options", nil, map[string]int{agenttest.Search: 7, agenttest.Email: 2, agenttest.Fetch: 3, agenttest.File: 1}},
		{"effects only", &adkguard.Options{Specs: []tools.Spec{readOnly(agenttest.Search), readOnly(agenttest.Fetch)}},
			agenttest.ScenarioWant()},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			g, err := adkguard.New(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			cfg := llmagent.Config{Name: "assistant", Model: &nextLLM{next: sc.Next}, Tools: scenarioTools(t, sc, false)}
			run(t, cfg, []*plugin.Plugin{g.Plugin()}, genai.NewContentFromText("go", genai.RoleUser))
			if got := sc.Counts(); !maps.Equal(got, c.want) {
				t.Fatalf("executions %v, want %v", got, c.want)
			}
		})
	}
}

// TestZeroConfigSchema: with nil options, arguments that break the input
// schema ADK declares for a tool are not run; the model reads why.
func TestZeroConfigSchema(t *testing.T) {
	sc := agenttest.NewScenario()
	g, err := adkguard.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]string{}
	cfg := llmagent.Config{Name: "assistant", Tools: scenarioTools(t, sc, false),
		Model: &nextLLM{turns([]agenttest.Call{{ID: "bad", Tool: agenttest.Search, Args: `{"q":7}`}}), func(id string, b []byte) { read[id] = string(b) }}}
	run(t, cfg, []*plugin.Plugin{g.Plugin()}, genai.NewContentFromText("go", genai.RoleUser))
	if n := sc.Counts()[agenttest.Search]; n != 0 || !strings.Contains(read["bad"], `"INVALID_PAYLOAD"`) {
		t.Fatalf("searches %d, the model read %s; want none run, INVALID_PAYLOAD", n, read["bad"])
	}
}

// TestInterruptOnDeferRefused: ADK has no pause a callback can ask for,
// so the option is refused, with the reason, rather than ignored.
func TestInterruptOnDeferRefused(t *testing.T) {
	_, err := adkguard.New(&adkguard.Options{InterruptOnDefer: true})
	if err == nil || !strings.Contains(err.Error(), "RequireConfirmation") {
		t.Fatalf("New with InterruptOnDefer: %v, want it refused with the reason", err)
	}
}
