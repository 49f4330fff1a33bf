package adkguard_test

import (
	"context"
	"encoding/json"
	"iter"
	"testing"

	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/agenttest"
	adkagent "google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/plugin/retryandreflect"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

// nextLLM stands in for the language model, the only part of these
// sessions that is scripted: each turn it emits the function calls next
// returns, and text once next returns nil; it hands the function
// responses it reads to result, when set.
type nextLLM struct {
	next   func() []agenttest.Call
	result func(id string, b []byte)
}

func (m *nextLLM) Name() string { return "scripted" }

func (m *nextLLM) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if fr := p.FunctionResponse; fr != nil && m.result != nil {
					b, err := json.Marshal(fr.Response)
					if err != nil {
						yield(nil, err)
						return
					}
					m.result(fr.ID, b)
				}
			}
		}
		calls := m.next()
		if calls == nil {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		parts := make([]*genai.Part, len(calls))
		for i, c := range calls {
			var args map[string]any
			if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
				yield(nil, err)
				return
			}
			parts[i] = &genai.Part{FunctionCall: &genai.FunctionCall{ID: c.ID, Name: c.Tool, Args: args}}
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: parts}}, nil)
	}
}

// inBand makes a tool that fails with a Go error return {"error": …}
// instead, the way a tool author keeps the error in the result.
func inBand(res map[string]any, err error) (map[string]any, error) {
	if err != nil {
		return map[string]any{"error": err.Error()}, nil
	}
	return res, nil
}

// scenarioTools are the idiom scenario's four tools as ADK function
// tools; with errorsInBand they return their errors as {"error": …}.
func scenarioTools(t *testing.T, sc *agenttest.Scenario, errorsInBand bool) []tool.Tool {
	t.Helper()
	wrap := func(res map[string]any, err error) (map[string]any, error) {
		if errorsInBand {
			return inBand(res, err)
		}
		return res, err
	}
	must := func(tl tool.Tool, err error) tool.Tool {
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	return []tool.Tool{
		must(functiontool.New(functiontool.Config{Name: agenttest.Search, Description: "Search the web (billed)."},
			func(_ adkagent.Context, in agenttest.SearchArgs) (map[string]any, error) {
				return wrap(sc.SearchRun(in.Q))
			})),
		must(functiontool.New(functiontool.Config{Name: agenttest.Email, Description: "Send an email (billed)."},
			func(_ adkagent.Context, in agenttest.EmailArgs) (map[string]any, error) {
				return wrap(sc.EmailRun(in.To))
			})),
		must(functiontool.New(functiontool.Config{Name: agenttest.Fetch, Description: "Fetch a page."},
			func(_ adkagent.Context, in agenttest.FetchArgs) (map[string]any, error) {
				return wrap(sc.FetchRun(in.URL))
			})),
		must(functiontool.New(functiontool.Config{Name: agenttest.File, Description: "File a ticket."},
			func(_ adkagent.Context, in agenttest.TicketArgs) (map[string]any, error) {
				return wrap(sc.FileRun(in.Title))
			})),
	}
}

// start builds a real runner and llmagent from cfg and plugins, and
// returns send, which plays one Run of it (one session) with msg and
// fails the test if the run was aborted.
func start(t *testing.T, cfg llmagent.Config, plugins []*plugin.Plugin) (send func(msg *genai.Content) []*genai.Part) {
	t.Helper()
	return startOn(t, session.InMemoryService(), cfg, plugins)
}

// startOn is start with the runner's sessions kept in svc (app
// "preflight-test", user "user", session "s1").
func startOn(t *testing.T, svc session.Service, cfg llmagent.Config, plugins []*plugin.Plugin) (send func(msg *genai.Content) []*genai.Part) {
	t.Helper()
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "preflight-test", Agent: a, SessionService: svc,
		AutoCreateSession: true, PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		t.Fatal(err)
	}
	return func(msg *genai.Content) []*genai.Part {
		t.Helper()
		var parts []*genai.Part
		for ev, err := range r.Run(context.Background(), "user", "s1", msg, adkagent.RunConfig{}) {
			if err != nil {
				t.Fatalf("the run was aborted: %v", err)
			}
			if ev.Content != nil {
				parts = append(parts, ev.Content.Parts...)
			}
		}
		return parts
	}
}

// run plays one Run of a new runner with msg.
func run(t *testing.T, cfg llmagent.Config, plugins []*plugin.Plugin, msg *genai.Content) []*genai.Part {
	t.Helper()
	return start(t, cfg, plugins)(msg)
}

// TestIdioms plays the idiom scenario (a priced read-only search, a
// side-effecting email, a fetch that fails with a 503 once, a ticket tool
// that always fails with a 422) through the real ADK runner with each
// way ADK hands a tool's error to the model, the guard with no Classify:
// the tools must run 5 / 2 / 2 / 1 times in every one.
func TestIdioms(t *testing.T) {
	for _, c := range []struct {
		name      string
		inBand    bool // the tools return {"error": …}
		callbacks bool // the guard as the agent's callbacks, not a plugin
		plugins   func(g *adkguard.Guard) []*plugin.Plugin
	}{
		{name: "Go errors", plugins: func(g *adkguard.Guard) []*plugin.Plugin { return []*plugin.Plugin{g.Plugin()} }},
		{name: "Go errors, agent callbacks", callbacks: true},
		{name: "retryandreflect after the guard", plugins: func(g *adkguard.Guard) []*plugin.Plugin {
			return []*plugin.Plugin{g.Plugin(), retryandreflect.MustNew(retryandreflect.WithMaxRetries(5))}
		}},
		{name: "retryandreflect before the guard", plugins: func(g *adkguard.Guard) []*plugin.Plugin {
			return []*plugin.Plugin{retryandreflect.MustNew(retryandreflect.WithMaxRetries(5)), g.Plugin()}
		}},
		{name: "retryandreflect, agent callbacks", callbacks: true, plugins: func(*adkguard.Guard) []*plugin.Plugin {
			return []*plugin.Plugin{retryandreflect.MustNew()}
		}},
		{name: "errors in the result", inBand: true, plugins: func(g *adkguard.Guard) []*plugin.Plugin { return []*plugin.Plugin{g.Plugin()} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			g, err := adkguard.New(&adkguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
			if err != nil {
				t.Fatal(err)
			}
			cfg := llmagent.Config{Name: "assistant", Model: &nextLLM{sc.Next, sc.Result}, Tools: scenarioTools(t, sc, c.inBand)}
			if c.callbacks {
				cfg.BeforeModelCallbacks = []llmagent.BeforeModelCallback{g.BeforeModel}
				cfg.BeforeToolCallbacks = []llmagent.BeforeToolCallback{g.BeforeTool}
				cfg.OnToolErrorCallbacks = []llmagent.OnToolErrorCallback{g.OnToolError}
				cfg.AfterToolCallbacks = []llmagent.AfterToolCallback{g.AfterTool}
			}
			var plugins []*plugin.Plugin
			if c.plugins != nil {
				plugins = c.plugins(g)
			}
			run(t, cfg, plugins, genai.NewContentFromText("go", genai.RoleUser))
			t.Log(sc.Verify(t, g.Session().Guard()))
		})
	}
}
