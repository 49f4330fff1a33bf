package anthropicguard_test

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
	"github.com/agentpreflight/preflight/agent/anthropicguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
)

// The wiring of a Claude agent on the SDK's tool runner: runner tools
// (one fails with a Go error, which the runner hands the model as an
// is_error result), guarded, the runner given the guard's Observe so that
// a withheld call names the model's tool_use ids, and the run's own error
// handled. The model is a scripted endpoint (a real agent's client is
// anthropic.NewClient(), which reads ANTHROPIC_API_KEY): it fetches a
// page twice (the first fetch fails with a 503), searches twice, then
// sends one email and one more the budget does not hold.
func Example_wiring() {
	type fetchArgs struct {
		URL string `json:"url"`
	}
	type searchArgs struct {
		Q string `json:"q"`
	}
	type emailArgs struct {
		To string `json:"to"`
	}
	fetches := 0
	fetch, err := toolrunner.NewBetaToolFromJSONSchema("fetch_page", "Fetch a page.",
		func(_ context.Context, in fetchArgs) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			if fetches++; fetches == 1 {
				return anthropic.BetaToolResultBlockParamContentUnion{}, errors.New("HTTP 503 Service Unavailable")
			}
			return text("the page " + in.URL), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	search, err := toolrunner.NewBetaToolFromJSONSchema("web_search", "Search the web (billed).",
		func(_ context.Context, in searchArgs) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			return text("3 hits for " + in.Q), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	email, err := toolrunner.NewBetaToolFromJSONSchema("send_email", "Send an email (billed).",
		func(_ context.Context, in emailArgs) (anthropic.BetaToolResultBlockParamContentUnion, error) {
			return text("sent to " + in.To), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	model := httptest.NewServer(&scriptedModel{next: exampleTurns(), result: func(id string, b []byte) { fmt.Printf("%s read %.60s\n", id, b) }})
	defer model.Close()

	guard, err := anthropicguard.New(&adapt.Options{BudgetUSD: "0.06", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email", Effects: preflight.EffectsSideEffecting}},
		{PriceUSD: "0.01", Operation: preflight.Operation{Name: "web_search", Effects: preflight.EffectsReadOnly}},
		{Operation: preflight.Operation{Name: "fetch_page", Effects: preflight.EffectsReadOnly}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	client := anthropic.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("example"))
	params := anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 1024,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("fetch, search, mail"))}},
		MaxIterations: 20,
		DisableThread: true, // the scripted endpoint speaks the plain Messages API
	}
	runner := client.Beta.Messages.NewToolRunner(guard.Tools(fetch, search, email), params, guard.Observe())
	msg, err := runner.RunToCompletion(context.Background())
	if err != nil {
		log.Fatal(err) // the API failed or the run's context ended: not a tool, not a decision
	}
	spent, _ := guard.Session().Guard().SpentUSD(context.Background())
	fmt.Println("answer:", msg.Content[0].Text, "fetches:", fetches, "spent: $"+spent)
	// Output:
	// c1 read Error: HTTP 503 Service Unavailable
	// c2 read the page https://x.io/a
	// c3 read 3 hits for go
	// c4 read 3 hits for go
	// c5 read sent to a@x.io
	// c6 read {"error":"not run: the estimated cost of \"send_email\" ($0.
	// answer: done fetches: 2 spent: $0.05
}

// The same agent in a loop written by hand against the Messages API: each
// tool_use block of a response is answered through the guard, which hands
// a tool's error to the model as an is_error tool_result, as the runner
// does.
func Example_handWritten() {
	fetches := 0
	runTool := func(_ context.Context, name string, input json.RawMessage) (string, error) {
		var in map[string]string
		if err := json.Unmarshal(input, &in); err != nil {
			return "", err
		}
		switch name {
		case "fetch_page":
			if fetches++; fetches == 1 {
				return "", errors.New("HTTP 503 Service Unavailable")
			}
			return "the page " + in["url"], nil
		case "web_search":
			return "3 hits for " + in["q"], nil
		}
		return "sent to " + in["to"], nil
	}
	model := httptest.NewServer(&scriptedModel{next: exampleTurns(), result: func(id string, b []byte) { fmt.Printf("%s read %.60s\n", id, b) }})
	defer model.Close()
	guard, err := anthropicguard.New(&adapt.Options{BudgetUSD: "0.06", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email", Effects: preflight.EffectsSideEffecting}},
		{PriceUSD: "0.01", Operation: preflight.Operation{Name: "web_search", Effects: preflight.EffectsReadOnly}},
		{Operation: preflight.Operation{Name: "fetch_page", Effects: preflight.EffectsReadOnly}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	client := anthropic.NewClient(option.WithBaseURL(model.URL), option.WithAPIKey("example"))
	ctx := context.Background()
	messages := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("fetch, search, mail"))}
	for range 20 {
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 1024, Messages: messages})
		if err != nil {
			log.Fatal(err) // the API failed or the context ended: not a tool, not a decision
		}
		messages = append(messages, msg.ToParam())
		if msg.StopReason != anthropic.StopReasonToolUse {
			fmt.Println("answer:", msg.Content[0].Text)
			break
		}
		var results []anthropic.ContentBlockParamUnion
		for _, b := range msg.Content {
			if b.Type == "tool_use" {
				use := b.AsToolUse()
				results = append(results, guard.Call(ctx, use, func(ctx context.Context, input json.RawMessage) (string, error) {
					return runTool(ctx, use.Name, input)
				}))
			}
		}
		messages = append(messages, anthropic.NewUserMessage(results...))
	}
	spent, _ := guard.Session().Guard().SpentUSD(ctx)
	fmt.Println("fetches:", fetches, "spent: $"+spent)
	// Output:
	// c1 read Error: HTTP 503 Service Unavailable
	// c2 read the page https://x.io/a
	// c3 read 3 hits for go
	// c4 read 3 hits for go
	// c5 read sent to a@x.io
	// c6 read {"error":"not run: the estimated cost of \"send_email\" ($0.
	// answer: done
	// fetches: 2 spent: $0.05
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
