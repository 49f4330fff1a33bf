package langchaingoguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/langchaingoguard"
	pftools "github.com/agentpreflight/preflight/agent/tools"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
)

// scriptedModel stands in for the language model, the only part of these
// sessions that is scripted: each turn it asks for the tool calls next
// returns (as an OpenAI-style function-calling model does), and answers
// "done" once next returns nil; it hands the tool results it reads to
// result, when set.
type scriptedModel struct {
	next   func() []agenttest.Call
	result func(id string, b []byte)
}

func (m *scriptedModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	for _, mc := range msgs {
		for _, p := range mc.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok && m.result != nil {
				m.result(r.ToolCallID, []byte(r.Content))
			}
		}
	}
	calls := m.next()
	if calls == nil {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "done"}}}, nil
	}
	tc := make([]llms.ToolCall, len(calls))
	for i, c := range calls {
		tc[i] = llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Tool, Arguments: c.Args}}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: tc}}}, nil
}

func (m *scriptedModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// fn is a LangChainGo tool made of a function, as a user writes one.
type fn struct {
	name string
	call func(ctx context.Context, input string) (string, error)
}

func (f fn) Name() string                                           { return f.name }
func (f fn) Description() string                                    { return "the scenario's " + f.name }
func (f fn) Call(ctx context.Context, input string) (string, error) { return f.call(ctx, input) }

// style is how a tool hands its failure on.
type style int

const (
	goError style = iota // a Go error
	textErr              // the text "error: …", as LangChainGo's calculator does
	jsonErr              // a JSON object {"error": …}
)

// scenarioTools are the idiom scenario's four tools as LangChainGo tools
// taking JSON input, each failing in the given style.
func scenarioTools(sc *agenttest.Scenario, st style) []tools.Tool {
	tool := func(name, field string, run func(string) (map[string]any, error)) tools.Tool {
		return fn{name, func(_ context.Context, input string) (string, error) {
			var in map[string]string
			if err := json.Unmarshal([]byte(input), &in); err != nil {
				return "", err
			}
			res, err := run(in[field])
			switch {
			case err != nil && st == textErr:
				return "error: " + err.Error(), nil
			case err != nil && st == jsonErr:
				b, _ := json.Marshal(map[string]string{"error": err.Error()})
				return string(b), nil
			case err != nil:
				return "", err
			}
			b, err := json.Marshal(res)
			return string(b), err
		}}
	}
	return []tools.Tool{
		tool(agenttest.Search, "q", sc.SearchRun),
		tool(agenttest.Email, "to", sc.EmailRun),
		tool(agenttest.Fetch, "url", sc.FetchRun),
		tool(agenttest.File, "title", sc.FileRun),
	}
}

// TestIdioms plays the idiom scenario (a priced read-only search, a
// side-effecting email, a fetch that fails with a 503 once, a ticket tool
// that always fails with a 422) through LangChainGo's real executor and
// OpenAIFunctionsAgent, only the model scripted, with each way a
// LangChainGo tool hands on a failure, the guard with no Classify: the
// tools must run 5 / 2 / 2 / 1 times, 3 calls reused, the ticket's retry
// blocked, nothing deferred, $0.13 spent, and the run never aborted.
func TestIdioms(t *testing.T) {
	for _, c := range []struct {
		name string
		st   style
	}{
		{"Go errors, made observations by Agent", goError},
		{"text errors, as the calculator's", textErr},
		{"{error} objects", jsonErr},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			sc := agenttest.NewScenario()
			g, err := langchaingoguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
			if err != nil {
				t.Fatal(err)
			}
			ag := agents.NewOpenAIFunctionsAgent(&scriptedModel{sc.Next, sc.Result}, scenarioTools(sc, c.st))
			ex := agents.NewExecutor(g.Agent(ag), agents.WithMaxIterations(50))
			out, err := chains.Run(ctx, ex, "go")
			if err != nil {
				t.Fatalf("the run was aborted: %v", err)
			}
			if out != "done" {
				t.Fatalf("the run ended with %q", out)
			}
			t.Log(sc.Verify(t, g.Session().Guard()))
			answers, err := sc.Answered(g.Session().Guard())
			if err != nil || answers != agenttest.ScenarioAnswers() {
				t.Fatalf("answers %+v (%v), want %+v", answers, err, agenttest.ScenarioAnswers())
			}
			t.Logf("%+v", answers)
		})
	}
}

// TestToolErrorPassesThrough: a tool guarded by Tool keeps its own Go
// error (the executor then ends the run, as it would unguarded); the error
// is classified, so a terminal one is not retried, and the withheld retry
// is an observation, not an error.
func TestToolErrorPassesThrough(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	g, err := langchaingoguard.New(&adapt.Options{Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	file := g.Tool(scenarioTools(sc, goError)[3])
	if _, err := file.Call(ctx, `{"title":"disk full"}`); !errors.As(err, new(agenttest.StatusError)) {
		t.Fatalf("first call: error %v, want the tool's own", err)
	}
	out, err := file.Call(ctx, `{"title":"disk full"}`)
	if err != nil || !strings.Contains(out, `"decision":"block"`) || !strings.Contains(out, `"RETRY_CAP_REACHED"`) {
		t.Fatalf("retry: %q, %v; want a block observation", out, err)
	}
	if n := sc.Counts()[agenttest.File]; n != 1 {
		t.Fatalf("the ticket tool ran %d times, want 1", n)
	}
}

// TestCancelled: a call whose context is done is not run, and the agent's
// tools hand the cancellation on as an error, which ends the run.
func TestCancelled(t *testing.T) {
	sc := agenttest.NewScenario()
	g, err := langchaingoguard.New(&adapt.Options{Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ag := g.Agent(agents.NewOpenAIFunctionsAgent(&scriptedModel{next: sc.Next}, scenarioTools(sc, goError)))
	if _, err := ag.GetTools()[0].Call(ctx, `{"q":"alpha"}`); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n := sc.Counts()[agenttest.Search]; n != 0 {
		t.Fatalf("the search ran %d times, want 0", n)
	}
}

// TestTextInput: a ReAct agent passes free text, decided as
// {"input": …}; repeating it is reused once a spec says the tool is
// read-only.
func TestTextInput(t *testing.T) {
	for _, c := range []struct {
		input string
		want  string
	}{
		{`{"q":"alpha"}`, `{"q":"alpha"}`},
		{` {"q":"alpha"} `, `{"q":"alpha"}`},
		{"alpha", `{"input":"alpha"}`},
		{`["alpha"]`, `{"input":"[\"alpha\"]"}`},
		{`{"q":`, `{"input":"{\"q\":"}`},
		{"", `{"input":""}`},
		{"\xa3", `{"inputBase64":"ow=="}`},
		{"\xf9", `{"inputBase64":"+Q=="}`}, // not the same call as "\xa3", as U+FFFD would make it
	} {
		if got := string(langchaingoguard.Arguments(c.input)); got != c.want {
			t.Errorf("Arguments(%q) = %s, want %s", c.input, got, c.want)
		}
	}
	ctx := context.Background()
	runs := 0
	search := fn{"search", func(_ context.Context, input string) (string, error) {
		runs++
		return fmt.Sprintf("results for %s (run %d)", input, runs), nil
	}}
	g, err := langchaingoguard.New(&adapt.Options{Defaults: agenttest.ScenarioSpecs()[0]})
	if err != nil {
		t.Fatal(err)
	}
	guarded := g.Tool(search)
	a, _ := guarded.Call(ctx, "alpha")
	b, _ := guarded.Call(ctx, "alpha")
	if a != b || runs != 1 || a != "results for alpha (run 1)" {
		t.Fatalf("outputs %q, %q after %d runs; want the first reused", a, b, runs)
	}
}

// TestZeroConfig plays the idiom scenario with Go errors through the
// executor with no specs: each tool is known by its name once guarded, so
// the ticket's terminal failure is not retried; LangChainGo does not say
// which tools are read-only, so nothing is reused until a spec says so
// (then 5 / 2 / 2 / 1), and nothing is charged without a price.
func TestZeroConfig(t *testing.T) {
	readOnly := func(name string) pftools.Spec {
		return pftools.Spec{Operation: preflight.Operation{Name: name, Effects: preflight.EffectsReadOnly}}
	}
	for _, c := range []struct {
		name string
		opts *adapt.Options
		want map[string]int
	}{
		{"nil options", nil, map[string]int{agenttest.Search: 7, agenttest.Email: 2, agenttest.Fetch: 3, agenttest.File: 1}},
		{"effects only", &adapt.Options{Specs: []pftools.Spec{readOnly(agenttest.Search), readOnly(agenttest.Fetch)}}, agenttest.ScenarioWant()},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			g, err := langchaingoguard.New(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			ex := agents.NewExecutor(g.Agent(agents.NewOpenAIFunctionsAgent(&scriptedModel{next: sc.Next}, scenarioTools(sc, goError))), agents.WithMaxIterations(50))
			if out, err := chains.Run(context.Background(), ex, "go"); err != nil || out != "done" {
				t.Fatalf("the run ended with %q, %v", out, err)
			}
			if got := sc.Counts(); !maps.Equal(got, c.want) {
				t.Fatalf("executions %v, want %v", got, c.want)
			}
			if spent, _ := g.Session().Guard().SpentUSD(context.Background()); spent != "0" {
				t.Fatalf("spent %s without prices, want 0", spent)
			}
		})
	}
}

// call is one tool call of a scripted turn.
func call(id, tool, args string) []agenttest.Call {
	return []agenttest.Call{{ID: id, Tool: tool, Args: args}}
}

// script returns the next function of a scripted model that plays turns.
func script(turns ...[]agenttest.Call) func() []agenttest.Call {
	return func() []agenttest.Call {
		if len(turns) == 0 {
			return nil
		}
		t := turns[0]
		turns = turns[1:]
		return t
	}
}
