package genkitguard_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// The tools of a Generate guarded with a $0.25 budget; a call deferred for
// the budget comes back as an interrupt for the application to handle.
// The model is scripted (a real one would come from a model plugin and
// choose the calls): it asks for AAA twice, then BBB and CCC.
func Example() {
	ctx := context.Background()
	g := genkit.Init(ctx)
	type quoteArgs struct {
		Symbol string `json:"symbol"`
	}
	quote := genkit.DefineTool(g, "market_quote", "Real-time quote (billed).",
		func(_ *ai.ToolContext, in quoteArgs) (map[string]any, error) {
			return map[string]any{"symbol": in.Symbol, "price": 101.25}, nil
		})
	guard, err := genkitguard.New(&genkitguard.Options{
		BudgetUSD: "0.25",
		Specs: []tools.Spec{{PriceUSD: "0.10", TTLSeconds: "600",
			Operation: preflight.Operation{Name: "market_quote", Effects: preflight.EffectsReadOnly}}},
		InterruptOnDefer: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	symbols := []string{"AAA", "AAA", "BBB", "CCC"}
	m := genkit.DefineModelAction(g, "example/scripted", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(_ context.Context, req *ai.ModelRequest, _ any, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			if last := req.Messages[len(req.Messages)-1]; last.Role == ai.RoleTool {
				for _, p := range last.Content {
					fmt.Println(p.ToolResponse.Ref, p.ToolResponse.Output) // what the model reads
				}
			}
			if len(symbols) == 0 {
				return &ai.ModelResponse{Message: ai.NewModelTextMessage("done"), FinishReason: ai.FinishReasonStop}, nil
			}
			ref := fmt.Sprintf("call-%d", 5-len(symbols))
			req0 := &ai.ToolRequest{Name: "market_quote", Ref: ref, Input: map[string]any{"symbol": symbols[0]}}
			symbols = symbols[1:]
			return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(req0)), FinishReason: ai.FinishReasonStop}, nil
		})
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("Quote AAA, BBB and CCC."),
		ai.WithTools(quote), ai.WithMaxTurns(10), ai.WithUse(guard))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.FinishReason)
	for _, p := range resp.Interrupts() {
		fmt.Println("interrupted:", p.ToolRequest.Ref, p.ToolRequest.Input)
	}
	// Output:
	// call-1 map[price:101.25 symbol:AAA]
	// call-2 map[price:101.25 symbol:AAA]
	// call-3 map[price:101.25 symbol:BBB]
	// interrupted
	// interrupted: call-4 map[symbol:CCC]
}
