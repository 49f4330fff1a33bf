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
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
)

// scriptedLLM stands in for the language model, the one part of an agent
// a test cannot run: it emits the function calls of the script's next
// turn and records the function responses it is given.
type scriptedLLM struct{ rec *agenttest.Recorder }

func (m *scriptedLLM) Name() string { return "scripted" }

func (m *scriptedLLM) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if fr := p.FunctionResponse; fr != nil {
					b, err := json.Marshal(fr.Response)
					if err != nil {
						yield(nil, err)
						return
					}
					m.rec.Result(fr.ID, b)
				}
			}
		}
		calls := m.rec.Next()
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

// scriptTools are the script's three tools as ADK function tools.
func scriptTools(t *testing.T, ts *agenttest.Tools) []tool.Tool {
	t.Helper()
	q, err := functiontool.New(functiontool.Config{Name: agenttest.Quote, Description: "Real-time quote (billed per call)."},
		func(_ adkagent.Context, in agenttest.QuoteArgs) (map[string]any, error) {
			return ts.QuoteRun(in.Symbol), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := functiontool.New(functiontool.Config{Name: agenttest.Ticket, Description: "Create a ticket."},
		func(_ adkagent.Context, in agenttest.TicketArgs) (map[string]any, error) {
			return ts.TicketRun(in.Title), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	f, err := functiontool.New(functiontool.Config{Name: agenttest.Flaky, Description: "Search an index."},
		func(_ adkagent.Context, in agenttest.SearchArgs) (map[string]any, error) {
			return ts.FlakyRun(in.Q), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return []tool.Tool{q, tk, f}
}

func newGuard(t *testing.T) *adkguard.Guard {
	t.Helper()
	g, err := adkguard.New(&adkguard.Options{BudgetUSD: agenttest.BudgetUSD, Specs: agenttest.Specs(), Classify: agenttest.Classify})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestScript runs the scripted session through a real runner and
// llmagent, the guard enabled as a runner plugin and as an agent's
// callback pair: one run, which no decision may abort.
func TestScript(t *testing.T) {
	for _, how := range []string{"plugin", "callbacks"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			ts := agenttest.NewTools()
			rec := agenttest.NewRecorder(ts)
			g := newGuard(t)
			cfg := llmagent.Config{Name: "assistant", Model: &scriptedLLM{rec}, Tools: scriptTools(t, ts)}
			var plugins []*plugin.Plugin
			if how == "plugin" {
				plugins = []*plugin.Plugin{g.Plugin()}
			} else {
				cfg.BeforeToolCallbacks = []llmagent.BeforeToolCallback{g.BeforeTool}
				cfg.AfterToolCallbacks = []llmagent.AfterToolCallback{g.AfterTool}
			}
			a, err := llmagent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: "preflight-test", Agent: a, SessionService: session.InMemoryService(),
				AutoCreateSession: true, PluginConfig: runner.PluginConfig{Plugins: plugins}})
			if err != nil {
				t.Fatal(err)
			}
			var last string
			for ev, err := range r.Run(ctx, "user", "s1", genai.NewContentFromText("go", genai.RoleUser), adkagent.RunConfig{}) {
				if err != nil {
					t.Fatalf("the run was aborted: %v", err)
				}
				if ev.Content != nil && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].Text != "" {
					last = ev.Content.Parts[0].Text
				}
			}
			if last != "done" {
				t.Fatalf("the run ended with %q", last)
			}
			t.Log(rec.Verify(t, g.Session().Guard()))
		})
	}
}
