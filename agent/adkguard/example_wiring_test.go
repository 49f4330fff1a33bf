package adkguard_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/tools"
	adkagent "google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/plugin/retryandreflect"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// The wiring of a real ADK agent: the guard's plugin first, then ADK's
// retry-and-reflect plugin (ADK hands a tool's error to the model
// itself; the guard still records it as the failure it was), a streaming
// tool, and a tool that asks a person to confirm it (RequireConfirmation),
// resumed with the approval. The model is scripted (a real one would
// choose the calls): it fetches a page twice (the first fetch fails with
// a 503), searches, then sends an email.
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
	fetch, _ := functiontool.New(functiontool.Config{Name: "fetch_page", Description: "Fetch a page."},
		func(_ adkagent.Context, in fetchArgs) (map[string]any, error) {
			if fetches++; fetches == 1 {
				return nil, errors.New("HTTP 503 Service Unavailable")
			}
			return map[string]any{"page": in.URL}, nil
		})
	search, _ := functiontool.NewStreaming(functiontool.Config{Name: "web_search", Description: "Search the web (billed)."},
		func(_ adkagent.Context, in searchArgs) iter.Seq2[string, error] {
			return func(yield func(string, error) bool) {
				if yield("3 hits for ", nil) {
					yield(in.Q, nil)
				}
			}
		})
	email, _ := functiontool.New(functiontool.Config{Name: "send_email", Description: "Send an email.", RequireConfirmation: true},
		func(_ adkagent.Context, in emailArgs) (map[string]any, error) {
			return map[string]any{"sent": in.To}, nil
		})

	guard, err := adkguard.New(&adkguard.Options{BudgetUSD: "1", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email", Effects: preflight.EffectsSideEffecting}},
		{PriceUSD: "0.01", Operation: preflight.Operation{Name: "web_search", Effects: preflight.EffectsReadOnly}},
		{Operation: preflight.Operation{Name: "fetch_page", Effects: preflight.EffectsReadOnly}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: &wiringModel{}, Tools: []tool.Tool{fetch, search, email}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin(), retryandreflect.MustNew()}}})
	if err != nil {
		log.Fatal(err)
	}
	confirm := playExample(r, genai.NewContentFromText("go", genai.RoleUser))
	// A person approves the email; the same session goes on.
	playExample(r, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: confirm, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": true}}}}})
	spent, _ := guard.Session().Guard().SpentUSD(context.Background())
	fmt.Println("fetches:", fetches, "spent: $"+spent)
	// Output:
	// fetch_page: reflect and retry: HTTP 503 Service Unavailable
	// fetch_page: map[page:https://x.io/a]
	// web_search: map[result:3 hits for go]
	// send_email: map[error:error tool "send_email" requires confirmation, please approve or reject]
	// confirmation asked
	// send_email: map[sent:a@x.io]
	// assistant: done
	// fetches: 2 spent: $0.05
}

// playExample runs one turn of the session, prints the function
// responses and the confirmation asked for, and returns the id of that
// confirmation call.
func playExample(r *runner.Runner, msg *genai.Content) (confirm string) {
	for ev, err := range r.Run(context.Background(), "user", "s1", msg, adkagent.RunConfig{}) {
		if err != nil {
			log.Fatal(err)
		}
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName:
				confirm = p.FunctionCall.ID
				fmt.Println("confirmation asked")
			case p.FunctionResponse != nil && p.FunctionResponse.Response["error_details"] != nil: // retryandreflect's
				fmt.Println(p.FunctionResponse.Name+": reflect and retry:", p.FunctionResponse.Response["error_details"])
			case p.FunctionResponse != nil && p.FunctionResponse.Name != toolconfirmation.FunctionCallName:
				fmt.Println(p.FunctionResponse.Name+":", p.FunctionResponse.Response)
			case p.Text != "":
				fmt.Println("assistant:", p.Text)
			}
		}
	}
	return confirm
}

// wiringModel stands in for a language model: it fetches one page
// twice, searches, sends one email, then says "done".
type wiringModel struct{ turn int }

func (m *wiringModel) Name() string { return "scripted" }

func (m *wiringModel) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.turn++
		calls := map[int]*genai.FunctionCall{
			1: {Name: "fetch_page", Args: map[string]any{"url": "https://x.io/a"}},
			2: {Name: "fetch_page", Args: map[string]any{"url": "https://x.io/a"}},
			3: {Name: "web_search", Args: map[string]any{"q": "go"}},
			4: {Name: "send_email", Args: map[string]any{"to": "a@x.io"}},
		}
		c, ok := calls[m.turn]
		if !ok {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		c.ID = fmt.Sprint("c", m.turn)
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: c}}}}, nil)
	}
}
