package adkguard_test

import (
	"context"
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
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

// Every agent of a runner guarded by one plugin, with a $0.25 budget and
// a billed read-only tool. The model is scripted (a real one would choose
// the calls): it asks for the same quote twice, then two more.
func Example() {
	guard, err := adkguard.New(&adkguard.Options{
		BudgetUSD: "0.25",
		Specs: []tools.Spec{{PriceUSD: "0.10", TTLSeconds: "600",
			Operation: preflight.Operation{Name: "market_quote", Effects: preflight.EffectsReadOnly}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	type quoteArgs struct {
		Symbol string `json:"symbol"`
	}
	quote, err := functiontool.New(functiontool.Config{Name: "market_quote", Description: "Real-time quote (billed per call)."},
		func(_ adkagent.Context, in quoteArgs) (map[string]any, error) {
			return map[string]any{"symbol": in.Symbol, "price": 101.25}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "desk", Model: &exampleModel{symbols: []string{"AAA", "AAA", "BBB", "CCC"}},
		Tools: []tool.Tool{quote}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{
		AppName: "desk", Agent: root, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin()}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range r.Run(context.Background(), "user", "s1", genai.NewContentFromText("quotes, please", genai.RoleUser), adkagent.RunConfig{}) {
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range ev.Content.Parts {
			if fr := p.FunctionResponse; fr != nil {
				if fr.Response[adkguard.WithheldKey] != nil {
					fmt.Println(fr.ID, fr.Response[adkguard.WithheldKey])
				} else {
					fmt.Println(fr.ID, fr.Response["symbol"], fr.Response["price"])
				}
			}
		}
	}
	spent, _ := guard.Session().Guard().SpentUSD(context.Background())
	fmt.Println("spent $" + spent)
	// Output:
	// call-1 AAA 101.25
	// call-2 AAA 101.25
	// call-3 BBB 101.25
	// call-4 not run: the estimated cost of "market_quote" ($0.1; $0.05 left) does not fit the budget left in this session; answer with the results you already have instead
	// spent $0.2
}

// exampleModel stands in for a language model: one function call per
// turn, for each of symbols in turn, then a text.
type exampleModel struct{ symbols []string }

func (m *exampleModel) Name() string { return "scripted" }

func (m *exampleModel) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if len(m.symbols) == 0 {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		id := fmt.Sprintf("call-%d", 5-len(m.symbols))
		call := &genai.FunctionCall{ID: id, Name: "market_quote", Args: map[string]any{"symbol": m.symbols[0]}}
		m.symbols = m.symbols[1:]
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: call}}}}, nil)
	}
}
