package langchaingoguard_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/langchaingoguard"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
)

// textModel stands in for the language model of a ReAct (MRKL) agent,
// the one scripted part: each call answers with the next of calls as
// "Action: …\nAction Input: …" text, then with a final answer.
type textModel struct{ calls []agenttest.Call }

func (m *textModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	text := "Thought: I know the answer.\nFinal Answer: done"
	if len(m.calls) > 0 {
		c := m.calls[0]
		m.calls = m.calls[1:]
		var in map[string]string
		json.Unmarshal([]byte(c.Args), &in)
		for _, v := range in {
			text = "Thought: I need a tool.\nAction: " + c.Tool + "\nAction Input: " + v
		}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text}}}, nil
}

func (m *textModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// TestReActAgent plays the idiom scenario, its turns one call at a time,
// through the executor and a ReAct (one-shot MRKL) agent, whose tools
// take free text: a call is decided as {"input": …}. The tools fail with
// Go errors, which Agent hands the model as observations: 5 / 2 / 2 / 1
// executions and $0.13.
func TestReActAgent(t *testing.T) {
	sc := agenttest.NewScenario()
	var calls []agenttest.Call
	for turn := sc.Next(); turn != nil; turn = sc.Next() {
		calls = append(calls, turn...)
	}
	text := func(name string, run func(string) (map[string]any, error)) tools.Tool {
		return fn{name, func(_ context.Context, input string) (string, error) {
			res, err := run(input)
			if err != nil {
				return "", err
			}
			b, err := json.Marshal(res)
			return string(b), err
		}}
	}
	ts := []tools.Tool{text(agenttest.Search, sc.SearchRun), text(agenttest.Email, sc.EmailRun), text(agenttest.Fetch, sc.FetchRun), text(agenttest.File, sc.FileRun)}
	g, err := langchaingoguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	ex := agents.NewExecutor(g.Agent(agents.NewOneShotAgent(&textModel{calls}, ts)), agents.WithMaxIterations(50))
	out, err := chains.Run(context.Background(), ex, "go")
	if err != nil || out != "done" {
		t.Fatalf("the run ended with %q, %v", out, err)
	}
	if got := sc.Counts(); !maps.Equal(got, agenttest.ScenarioWant()) {
		t.Fatalf("executions %v, want %v", got, agenttest.ScenarioWant())
	}
	if spent, _ := g.Session().Guard().SpentUSD(context.Background()); spent != agenttest.ScenarioSpentUSD {
		t.Fatalf("spent %s, want %s", spent, agenttest.ScenarioSpentUSD)
	}
}
