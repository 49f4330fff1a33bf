package genkitguard_test

import (
	"context"
	"log"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// The tools of a Generate guarded with a $0.50 budget; a call deferred for
// the budget comes back as an interrupt for the application to handle.
func Example() {
	ctx := context.Background()
	g := genkit.Init(ctx) // with a model plugin
	quote := genkit.DefineTool(g, "market_quote", "Real-time quote (billed).",
		func(_ *ai.ToolContext, in struct{ Symbol string }) (string, error) { return "101.25", nil })
	guard, err := genkitguard.New(&genkitguard.Options{
		BudgetUSD: "0.50",
		Specs: []tools.Spec{{PriceUSD: "0.10", TTLSeconds: "600",
			Operation: preflight.Operation{Name: "market_quote", Effects: preflight.EffectsReadOnly}}},
		InterruptOnDefer: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	generate := func() (*ai.ModelResponse, error) {
		return genkit.Generate(ctx, g, ai.WithModelName("googleai/gemini-2.5-flash"),
			ai.WithPrompt("Quote AAA and BBB."), ai.WithTools(quote), ai.WithUse(guard))
	}
	_ = generate
}
