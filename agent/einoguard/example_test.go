package einoguard_test

import (
	"context"
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// A guarded ToolsNode: the second, identical turn is answered with the
// saved result, and a call over the budget is answered with a result
// saying why it was not run.
func Example() {
	ctx := context.Background()
	quote, _ := utils.InferTool("quote", "Real-time quote (billed).", func(_ context.Context, in struct {
		Symbol string `json:"symbol"`
	}) (string, error) {
		fmt.Println("quote ran for", in.Symbol)
		return `{"price":"101.25"}`, nil
	})
	guard, err := einoguard.New(&einoguard.Options{
		BudgetUSD: "0.15",
		Specs: []tools.Spec{{PriceUSD: "0.10",
			Operation: preflight.Operation{Name: "quote", Effects: preflight.EffectsReadOnly}}},
	})
	if err != nil {
		panic(err)
	}
	node, _ := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               []tool.BaseTool{quote},
		ToolCallMiddlewares: []compose.ToolMiddleware{guard.Middleware()},
	})
	call := func(symbol string) string {
		out, err := node.Invoke(ctx, schema.AssistantMessage("", []schema.ToolCall{{ID: "1",
			Function: schema.FunctionCall{Name: "quote", Arguments: `{"symbol":"` + symbol + `"}`}}}))
		if err != nil {
			panic(err)
		}
		return out[0].Content
	}
	fmt.Println(call("AAA"))
	fmt.Println(call("AAA"))
	fmt.Println(call("BBB")[:50])
	spent, err := guard.Session().Guard().SpentUSD(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("spent $" + spent)
	// Output:
	// quote ran for AAA
	// {"price":"101.25"}
	// {"price":"101.25"}
	// {"error":"not run: the estimated cost of \"quote\"
	// spent $0.1
}
