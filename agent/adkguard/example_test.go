package adkguard_test

import (
	"log"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/tools"
	adkagent "google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
)

// Every agent of a runner guarded by one plugin, with a $0.50 budget and
// a billed read-only tool.
func Example() {
	guard, err := adkguard.New(&adkguard.Options{
		BudgetUSD: "0.50",
		Specs: []tools.Spec{{PriceUSD: "0.10", TTLSeconds: "600",
			Operation: preflight.Operation{Name: "market_quote", Effects: preflight.EffectsReadOnly}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	var root adkagent.Agent // an llmagent with its tools
	_, err = runner.New(runner.Config{
		AppName: "desk", Agent: root, SessionService: session.InMemoryService(),
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin()}},
	})
	_ = err // nil agent here; a real one runs
}
