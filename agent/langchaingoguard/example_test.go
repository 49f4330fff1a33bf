package langchaingoguard_test

import (
	"context"
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/langchaingoguard"
	pftools "github.com/agentpreflight/preflight/agent/tools"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/tools"
)

// An executor whose agent is guarded: the model (scripted here, the one
// part of an agent an example cannot run) asks for the same quote twice
// and then for one the budget no longer holds; the quote runs once, the
// repeat reads the saved output and the third call reads why it was not
// run.
func Example() {
	quote := fn{"quote", func(_ context.Context, input string) (string, error) {
		fmt.Println("quote ran for", input)
		return `{"price":"101.25"}`, nil
	}}
	guard, err := langchaingoguard.New(&adapt.Options{
		BudgetUSD: "0.15",
		Specs: []pftools.Spec{{PriceUSD: "0.10",
			Operation: preflight.Operation{Name: "quote", Effects: preflight.EffectsReadOnly}}},
	})
	if err != nil {
		panic(err)
	}
	read := map[string]string{} // what the model read, by tool call id
	model := &scriptedModel{next: script(
		call("1", "quote", `{"symbol":"AAA"}`), call("2", "quote", `{"symbol":"AAA"}`), call("3", "quote", `{"symbol":"BBB"}`)),
		result: func(id string, b []byte) { read[id] = string(b) }}
	agent := agents.NewOpenAIFunctionsAgent(model, []tools.Tool{quote})

	executor := agents.NewExecutor(guard.Agent(agent)) // the one line

	if _, err := chains.Run(context.Background(), executor, "quote AAA twice, then BBB"); err != nil {
		panic(err)
	}
	for _, id := range []string{"1", "2", "3"} {
		fmt.Println(id+":", read[id][:min(len(read[id]), 50)])
	}
	spent, _ := guard.Session().Guard().SpentUSD(context.Background())
	fmt.Println("spent $" + spent)
	// Output:
	// quote ran for {"symbol":"AAA"}
	// 1: {"price":"101.25"}
	// 2: {"price":"101.25"}
	// 3: {"error":"not run: the estimated cost of \"quote\"
	// spent $0.1
}
