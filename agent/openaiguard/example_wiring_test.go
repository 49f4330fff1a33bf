package openaiguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/openaiguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The wiring of an agent on the SDK's agent session stream: local tool
// handlers (one fails with a Go error, which the SDK reports to the model
// as a failed tool, and OnToolError to the application), guarded, and the
// stream's own error handled. The hosted agent is a scripted session
// endpoint (a real agent's client is openai.NewClient(), which reads
// OPENAI_API_KEY): it fetches a page twice (the first fetch fails with a
// 503), searches twice, then sends one email and one more the budget does
// not hold.
func Example_wiring() {
	fetches := 0
	handlers := map[string]openai.AgentToolHandler{
		"fetch_page": func(_ context.Context, args map[string]any) (any, error) {
			if fetches++; fetches == 1 {
				return nil, errors.New("HTTP 503 Service Unavailable")
			}
			return fmt.Sprint("the page ", args["url"]), nil
		},
		"web_search": func(_ context.Context, args map[string]any) (any, error) {
			return fmt.Sprint("3 hits for ", args["q"]), nil
		},
		"send_email": func(_ context.Context, args map[string]any) (any, error) {
			return fmt.Sprint("sent to ", args["to"]), nil
		},
	}
	agent := httptest.NewServer(newSessionModel(exampleTurns(), func(id string, b []byte) { fmt.Printf("%s read %.60s\n", id, b) }))
	defer agent.Close()
	sessionID := "sess1"

	guard, err := openaiguard.New(&adapt.Options{BudgetUSD: "0.06", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email", Effects: preflight.EffectsSideEffecting}},
		{PriceUSD: "0.01", Operation: preflight.Operation{Name: "web_search", Effects: preflight.EffectsReadOnly}},
		{Operation: preflight.Operation{Name: "fetch_page", Effects: preflight.EffectsReadOnly}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	client := openai.NewClient(option.WithBaseURL(agent.URL), option.WithAPIKey("example"))
	stream := client.Beta.Agents.Sessions.Stream(context.Background(), sessionID, openai.AgentSessionStreamParams{
		Input:        "fetch, search, mail",
		ToolHandlers: guard.Handlers(handlers),
		OnToolError: func(_ context.Context, f openai.BetaAgentToolError) {
			fmt.Println("tool failed:", f.ToolName) // the guard has classified it; the model is told it failed
		},
	})
	defer stream.Close()
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		log.Fatal(err) // the API failed or the context ended: not a tool, not a decision
	}
	spent, _ := guard.Session().Guard().SpentUSD(context.Background())
	fmt.Println("fetches:", fetches, "spent: $"+spent)
	// Output:
	// tool failed: fetch_page
	// c1 read Tool handler failed.
	// c2 read the page https://x.io/a
	// c3 read 3 hits for go
	// c4 read 3 hits for go
	// c5 read sent to a@x.io
	// c6 read {"error":"not run: the estimated cost of \"send_email\" ($0.
	// fetches: 2 spent: $0.05
}

// The same agent in a Chat Completions tool loop written by hand: each
// tool call of a response is answered through the guard, which hands a
// tool's error to the model as the tool message "error: …".
func Example_chat() {
	fetches := 0
	runTool := exampleTool(&fetches)
	model := httptest.NewServer(&chatModel{next: exampleTurns(), result: func(id string, b []byte) { fmt.Printf("%s read %.60s\n", id, b) }})
	defer model.Close()
	guard := exampleGuard()
	client := openai.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("example"))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: openai.ChatModelGPT5_5, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("fetch, search, mail")}}
	for range 20 {
		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			log.Fatal(err) // the API failed or the context ended: not a tool, not a decision
		}
		msg := res.Choices[0].Message
		params.Messages = append(params.Messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			fmt.Println("answer:", msg.Content)
			break
		}
		for _, call := range msg.ToolCalls {
			params.Messages = append(params.Messages, guard.Call(ctx, call, func(ctx context.Context, args json.RawMessage) (string, error) {
				return runTool(ctx, call.Function.Name, args)
			}))
		}
	}
	spent, _ := guard.Session().Guard().SpentUSD(ctx)
	fmt.Println("fetches:", fetches, "spent: $"+spent)
	// Output:
	// c1 read error: HTTP 503 Service Unavailable
	// c2 read the page https://x.io/a
	// c3 read 3 hits for go
	// c4 read 3 hits for go
	// c5 read sent to a@x.io
	// c6 read {"error":"not run: the estimated cost of \"send_email\" ($0.
	// answer: done
	// fetches: 2 spent: $0.05
}

// The same agent in a Responses API tool loop written by hand: each
// function call of a response is answered through the guard.
func Example_responses() {
	fetches := 0
	runTool := exampleTool(&fetches)
	model := httptest.NewServer(&responsesModel{next: exampleTurns(), result: func(id string, b []byte) { fmt.Printf("%s read %.60s\n", id, b) }})
	defer model.Close()
	guard := exampleGuard()
	client := openai.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("example"))
	ctx := context.Background()
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("fetch, search, mail", responses.EasyInputMessageRoleUser)}
	for range 20 {
		res, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: openai.ChatModelGPT5_5, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
		if err != nil {
			log.Fatal(err) // the API failed or the context ended: not a tool, not a decision
		}
		calls := 0
		for _, item := range res.Output {
			if item.Type == "function_call" {
				fc := item.AsFunctionCall()
				calls++
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name),
					guard.CallResponse(ctx, fc, func(ctx context.Context, args json.RawMessage) (string, error) {
						return runTool(ctx, fc.Name, args)
					}))
			}
		}
		if calls == 0 {
			fmt.Println("answer:", res.OutputText())
			break
		}
	}
	spent, _ := guard.Session().Guard().SpentUSD(ctx)
	fmt.Println("fetches:", fetches, "spent: $"+spent)
	// Output:
	// c1 read error: HTTP 503 Service Unavailable
	// c2 read the page https://x.io/a
	// c3 read 3 hits for go
	// c4 read 3 hits for go
	// c5 read sent to a@x.io
	// c6 read {"error":"not run: the estimated cost of \"send_email\" ($0.
	// answer: done
	// fetches: 2 spent: $0.05
}

// exampleGuard is the examples' guard.
func exampleGuard() *openaiguard.Guard {
	guard, err := openaiguard.New(&adapt.Options{BudgetUSD: "0.06", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email", Effects: preflight.EffectsSideEffecting}},
		{PriceUSD: "0.01", Operation: preflight.Operation{Name: "web_search", Effects: preflight.EffectsReadOnly}},
		{Operation: preflight.Operation{Name: "fetch_page", Effects: preflight.EffectsReadOnly}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	return guard
}

// exampleTool runs the examples' tools by name, the first fetch failing
// with a 503; fetches counts the fetches.
func exampleTool(fetches *int) func(ctx context.Context, name string, args json.RawMessage) (string, error) {
	return func(_ context.Context, name string, args json.RawMessage) (string, error) {
		var in map[string]string
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		switch name {
		case "fetch_page":
			if *fetches++; *fetches == 1 {
				return "", errors.New("HTTP 503 Service Unavailable")
			}
			return "the page " + in["url"], nil
		case "web_search":
			return "3 hits for " + in["q"], nil
		}
		return "sent to " + in["to"], nil
	}
}

// exampleTurns is the scripted model's calls, one a turn.
func exampleTurns() func() []agenttest.Call {
	c := func(id, tool, args string) []agenttest.Call {
		return []agenttest.Call{{ID: id, Tool: tool, Args: args}}
	}
	return script(c("c1", "fetch_page", `{"url":"https://x.io/a"}`), c("c2", "fetch_page", `{"url":"https://x.io/a"}`),
		c("c3", "web_search", `{"q":"go"}`), c("c4", "web_search", `{"q":"go"}`),
		c("c5", "send_email", `{"to":"a@x.io"}`), c("c6", "send_email", `{"to":"b@x.io"}`))
}
