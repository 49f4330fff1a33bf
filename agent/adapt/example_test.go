package adapt_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
)

// An adapter hands each tool call to Call with a function that runs the
// tool. A call that fits the budget runs, a repeated read-only call is
// answered with the saved result, and a call that does not fit is answered
// with the withheld-call result, which the model reads as the tool's
// result.
func Example() {
	s, classify, err := adapt.NewSession(&adapt.Options{
		BudgetUSD: "0.25",
		Specs:     []tools.Spec{{Operation: preflight.Operation{Name: "quote", Effects: preflight.EffectsReadOnly}, PriceUSD: "0.10"}},
	})
	if err != nil {
		panic(err)
	}
	quote := func(symbol string) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) {
			return json.Marshal(map[string]any{"symbol": symbol, "price": 1.5})
		}
	}
	for _, symbol := range []string{"A", "B", "A", "C"} {
		args := json.RawMessage(`{"symbol":"` + symbol + `"}`)
		ans, w, err := adapt.Call(context.Background(), s, classify, "quote", args, quote(symbol))
		switch {
		case err != nil:
			fmt.Println("the tool failed:", err)
		case w != nil:
			fmt.Printf("%s: %s\n", symbol, w.JSON())
		default:
			fmt.Printf("%s: %s %s\n", symbol, ans.How, ans.Result)
		}
	}
	// Output:
	// A: ran {"price":1.5,"symbol":"A"}
	// B: ran {"price":1.5,"symbol":"B"}
	// A: reused {"price":1.5,"symbol":"A"}
	// C: {"error":"not run: the estimated cost of \"quote\" ($0.1; $0.05 left) does not fit the budget left in this session; answer with the results you already have instead","preflight":{"tool":"quote","decision":"defer","enforcement":"safe_to_skip","reasonCodes":["BUDGET_EXCEEDED"],"issues":[]}}
}
