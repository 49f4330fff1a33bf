package anthropicguard_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/anthropicguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
)

// The SDK's tool runner with its tools guarded: the model (a scripted
// endpoint here, the one part an example cannot run) asks for the same
// quote twice and then for one the budget no longer holds; the quote runs
// once, the repeat reads the saved result and the third call reads why it
// was not run.
func Example() {
	quote, _ := toolrunner.NewBetaToolFromBytes("quote", "Real-time quote (billed).",
		[]byte(`{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}`),
		func(_ context.Context, in struct{ Symbol string }) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			fmt.Println("quote ran for", in.Symbol)
			return text(`{"price":"101.25"}`), nil
		})
	guard, err := anthropicguard.New(&adapt.Options{
		BudgetUSD: "0.15",
		Specs: []tools.Spec{{PriceUSD: "0.10",
			Operation: preflight.Operation{Name: "quote", Effects: preflight.EffectsReadOnly}}},
	})
	if err != nil {
		panic(err)
	}
	turns := [][]agenttest.Call{{{ID: "1", Tool: "quote", Args: `{"symbol":"AAA"}`}},
		{{ID: "2", Tool: "quote", Args: `{"symbol":"AAA"}`}}, {{ID: "3", Tool: "quote", Args: `{"symbol":"BBB"}`}}}
	read := map[string]string{}
	model := httptest.NewServer(&scriptedModel{next: func() []agenttest.Call {
		if len(turns) == 0 {
			return nil
		}
		t := turns[0]
		turns = turns[1:]
		return t
	}, result: func(id string, b []byte) { read[id] = string(b) }})
	defer model.Close()
	client := anthropic.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("example"))

	params := anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: "scripted", MaxTokens: 1024,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("quote AAA twice, then BBB"))}},
		DisableThread: true,
	}

	runner := client.Beta.Messages.NewToolRunner(guard.Tools(quote), params, guard.Observe()) // the one line

	if _, err := runner.RunToCompletion(context.Background()); err != nil {
		panic(err)
	}
	for _, id := range []string{"1", "2", "3"} {
		fmt.Println(id+":", read[id][:min(len(read[id]), 50)])
	}
	spent, _ := guard.Session().Guard().SpentUSD(context.Background())
	fmt.Println("spent $" + spent)
	// Output:
	// quote ran for AAA
	// 1: {"price":"101.25"}
	// 2: {"price":"101.25"}
	// 3: {"error":"not run: the estimated cost of \"quote\"
	// spent $0.1
}
