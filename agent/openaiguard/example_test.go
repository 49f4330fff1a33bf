package openaiguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/openaiguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// A Chat Completions tool loop with each tool call answered through the
// guard: the model (a scripted endpoint here, the one part an example
// cannot run) asks for the same quote twice and then for one the budget
// no longer holds; the quote runs once, the repeat reads the saved result
// and the third call reads why it was not run, naming the call it would
// have repeated by the model's id.
func Example() {
	ctx := context.Background()
	guard, err := openaiguard.New(&adapt.Options{
		BudgetUSD: "0.15",
		Specs: []tools.Spec{{PriceUSD: "0.10",
			Operation: preflight.Operation{Name: "quote", Effects: preflight.EffectsReadOnly}}},
	})
	if err != nil {
		panic(err)
	}
	turns := [][]agenttest.Call{{{ID: "1", Tool: "quote", Args: `{"symbol":"AAA"}`}},
		{{ID: "2", Tool: "quote", Args: `{"symbol":"AAA"}`}}, {{ID: "3", Tool: "quote", Args: `{"symbol":"BBB"}`}}}
	model := httptest.NewServer(&chatModel{next: func() []agenttest.Call {
		if len(turns) == 0 {
			return nil
		}
		t := turns[0]
		turns = turns[1:]
		return t
	}})
	defer model.Close()
	client := openai.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("example"))
	quote := func(_ context.Context, args json.RawMessage) (string, error) {
		fmt.Println("quote ran for", string(args))
		return `{"price":"101.25"}`, nil
	}

	params := openai.ChatCompletionNewParams{Model: "scripted", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("quote AAA twice, then BBB")}}
	for {
		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			panic(err)
		}
		msg := res.Choices[0].Message
		params.Messages = append(params.Messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			break
		}
		for _, call := range msg.ToolCalls {
			answer := guard.Call(ctx, call, quote) // the one line
			fmt.Println(call.ID+":", answer.OfTool.Content.OfString.Value[:min(len(answer.OfTool.Content.OfString.Value), 50)])
			params.Messages = append(params.Messages, answer)
		}
	}
	spent, _ := guard.Session().Guard().SpentUSD(ctx)
	fmt.Println("spent $" + spent)
	// Output:
	// quote ran for {"symbol":"AAA"}
	// 1: {"price":"101.25"}
	// 2: {"price":"101.25"}
	// 3: {"error":"not run: the estimated cost of \"quote\"
	// spent $0.1
}
