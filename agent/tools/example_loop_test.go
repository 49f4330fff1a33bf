package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
)

// toolCall and toolMessage have the shape of a tool call in a model
// response and of the tool message answering it, as openai-go
// (ChatCompletionMessageToolCall: ID, Function.Name, Function.Arguments)
// and anthropic-sdk-go (ToolUseBlock: ID, Name, Input; ToolResultBlock)
// carry them; a real loop reads them from the SDK's types.
type toolCall struct{ ID, Name, Arguments string }
type toolMessage struct{ ToolCallID, Content string }

// A hand-written agent loop over a model SDK, guarded in two phases: every
// call of a model turn is decided first (Session.Start: the money of the
// calls allowed is reserved at once, so that parallel calls cannot
// overspend together), then the calls allowed run in parallel and each
// ends with its result (Running.Finish). A call not run is answered with a
// tool message too: the saved result on reuse, else the reason.
func ExampleSession_Start() {
	ctx := context.Background()
	set, _ := tools.NewSet(tools.Spec{}, tools.Spec{PriceUSD: "0.10", TTLSeconds: "600",
		Operation: preflight.Operation{Provider: tools.DefaultProvider, Name: "quote", Effects: preflight.EffectsReadOnly}})
	session, err := tools.NewSession(set, &tools.SessionOptions{Guard: agent.GuardOptions{BudgetUSD: "0.25"}})
	if err != nil {
		panic(err)
	}
	runTool := func(c toolCall) (string, error) { return `{"price":"101.25","call":"` + c.ID + `"}`, nil }

	// The model's turns (a real loop gets them from the model, and sends
	// the tool messages back).
	turns := [][]toolCall{
		{{"1", "quote", `{"symbol":"AAA"}`}, {"2", "quote", `{"symbol":"BBB"}`}, {"3", "quote", `{"symbol":"CCC"}`}},
		{{"4", "quote", `{"symbol":"AAA"}`}},
	}
	for _, turn := range turns {
		replies := make([]toolMessage, len(turn))
		var wg sync.WaitGroup
		for i, c := range turn {
			p, ans, err := session.Start(ctx, c.Name, json.RawMessage(c.Arguments))
			switch {
			case err != nil: // arguments that are not a JSON object
				replies[i] = toolMessage{c.ID, "not run: " + err.Error()}
			case p == nil && ans.How == tools.HowWithheld:
				replies[i] = toolMessage{c.ID, ans.Message}
			case p == nil: // reused or coalesced: the saved bytes
				replies[i] = toolMessage{c.ID, string(ans.Result)}
			default:
				wg.Add(1)
				go func() {
					defer wg.Done()
					out, err := runTool(c)
					p.Finish(ctx, []byte(out), agent.ClassifyError(err), err)
					replies[i] = toolMessage{c.ID, out}
					if err != nil {
						replies[i].Content = "error: " + err.Error()
					}
				}()
			}
		}
		wg.Wait()
		for _, r := range replies {
			fmt.Println(r.ToolCallID, r.Content)
		}
	}
	spent, err := session.Guard().SpentUSD(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("spent $" + spent)
	// Output:
	// 1 {"price":"101.25","call":"1"}
	// 2 {"price":"101.25","call":"2"}
	// 3 not run: the estimated cost of "quote" ($0.1; $0.05 left) does not fit the budget left in this session; answer with the results you already have instead
	// 4 {"price":"101.25","call":"1"}
	// spent $0.2
}
