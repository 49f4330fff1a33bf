package genkitguard_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// The wiring of a real Genkit agent: tool errors reach the model as
// {"error": …} instead of ending the Generate (ErrorsToModel, which
// spares interrupts), a tool that asks a person first
// (ToolContext.Interrupt) is restarted with the approval, and the guard.
// The model is scripted (a real one would come from a model plugin and
// choose the calls): it fetches a page twice (the first fetch fails with
// a 503), then sends an email.
func Example_wiring() {
	ctx := context.Background()
	g := genkit.Init(ctx)
	type fetchArgs struct {
		URL string `json:"url"`
	}
	type emailArgs struct {
		To string `json:"to"`
	}
	fetches := 0
	fetch := genkit.DefineTool(g, "fetch_page", "Fetch a page.", func(_ *ai.ToolContext, in fetchArgs) (string, error) {
		if fetches++; fetches == 1 {
			return "", errors.New("HTTP 503 Service Unavailable")
		}
		return "page " + in.URL, nil
	})
	email := genkit.DefineTool(g, "send_email", "Send an email (a person approves it).", func(tc *ai.ToolContext, in emailArgs) (string, error) {
		if !tc.IsResumed() {
			return "", tc.Interrupt(&ai.InterruptOptions{Metadata: map[string]any{"approve": "send an email to " + in.To + "?"}})
		}
		return "sent to " + in.To, nil
	})

	guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: "1", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email", Effects: preflight.EffectsSideEffecting}},
		{Operation: preflight.Operation{Name: "fetch_page", Effects: preflight.EffectsReadOnly}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	m := defineExampleModel(g)
	use := ai.WithUse(genkitguard.ErrorsToModel(), guard)
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(fetch, email), use)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range resp.Interrupts() {
		fmt.Println("interrupted:", p.ToolRequest.Name, p.Metadata["interrupt"])
	}
	// A person approves the email; the Generate restarts it.
	restart, err := email.RestartWith(resp.Interrupts()[0])
	if err != nil {
		log.Fatal(err)
	}
	resp, err = genkit.Generate(ctx, g, ai.WithModel(m), ai.WithMessages(resp.History()...), ai.WithTools(fetch, email), use,
		ai.WithToolRestarts(restart))
	if err != nil {
		log.Fatal(err)
	}
	spent, _ := guard.Session().Guard().SpentUSD(ctx)
	fmt.Println(resp.Text(), "fetches:", fetches, "spent: $"+spent)
	// Output:
	// tool: map[error:error calling tool fetch_page: HTTP 503 Service Unavailable]
	// tool: page https://x.io/a
	// interrupted: send_email map[approve:send an email to a@x.io?]
	// tool: sent to a@x.io
	// done fetches: 2 spent: $0.04
}

// defineExampleModel stands in for a language model: it prints the tool
// outputs it reads, fetches one page twice, sends one email, then says
// "done".
func defineExampleModel(g *genkit.Genkit) ai.Model {
	turn := 0
	return genkit.DefineModelAction(g, "example/wiring", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(_ context.Context, req *ai.ModelRequest, _ any, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			if last := req.Messages[len(req.Messages)-1]; last.Role == ai.RoleTool {
				for _, p := range last.Content {
					fmt.Println("tool:", p.ToolResponse.Output)
				}
			}
			turn++
			call := func(name string, in map[string]any) *ai.ModelResponse {
				r := &ai.ToolRequest{Name: name, Ref: fmt.Sprint("c", turn), Input: in}
				return &ai.ModelResponse{Message: ai.NewModelMessage(ai.NewToolRequestPart(r)), FinishReason: ai.FinishReasonStop}
			}
			switch turn {
			case 1, 2:
				return call("fetch_page", map[string]any{"url": "https://x.io/a"}), nil
			case 3:
				return call("send_email", map[string]any{"to": "a@x.io"}), nil
			}
			return &ai.ModelResponse{Message: ai.NewModelTextMessage("done"), FinishReason: ai.FinishReasonStop}, nil
		})
}
