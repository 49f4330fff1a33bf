package adkguard_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/agenttest"
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

type statusError int

func (e statusError) Error() string   { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusError) StatusCode() int { return int(e) }

// TestToolErrorClassified: a tool's Go error reaches the after hook,
// is classified by agent.ClassifyError (a 404 is terminal) and the same
// call is then not retried; ADK's error plugins see only the tool's own
// error, never a decision.
func TestToolErrorClassified(t *testing.T) {
	ctx := context.Background()
	runs := 0
	post, err := functiontool.New(functiontool.Config{Name: "post", Description: "Post."},
		func(_ adkagent.Context, in agenttest.TicketArgs) (map[string]any, error) {
			runs++
			return nil, statusError(404)
		})
	if err != nil {
		t.Fatal(err)
	}
	g, err := adkguard.New(&adkguard.Options{Specs: []tools.Spec{{Operation: preflight.Operation{Name: "post", Effects: preflight.EffectsSideEffecting}}}})
	if err != nil {
		t.Fatal(err)
	}
	var toolErrors []string
	watch, _ := plugin.New(plugin.Config{Name: "watch", OnToolErrorCallback: func(_ adkagent.Context, _ tool.Tool, _ map[string]any, err error) (map[string]any, error) {
		toolErrors = append(toolErrors, err.Error())
		return nil, nil
	}})
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: &fixedLLM{turns: 3}, Tools: []tool.Tool{post}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "t", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{g.Plugin(), watch}}})
	if err != nil {
		t.Fatal(err)
	}
	var responses []string
	for ev, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("go", genai.RoleUser), adkagent.RunConfig{}) {
		if err != nil {
			t.Fatalf("run aborted: %v", err)
		}
		if ev.Content != nil {
			for _, p := range ev.Content.Parts {
				if p.FunctionResponse != nil {
					r := p.FunctionResponse.Response
					if r[adkguard.WithheldKey] != nil {
						responses = append(responses, fmt.Sprint(r[adkguard.WithheldKey]))
					} else {
						responses = append(responses, fmt.Sprint(r["error"]))
					}
				}
			}
		}
	}
	if runs != 1 || len(responses) != 3 || len(toolErrors) != 1 {
		t.Fatalf("runs %d, responses %q, tool errors %q", runs, responses, toolErrors)
	}
	if responses[0] != "HTTP 404" || !strings.HasPrefix(responses[1], "not run: this exact call") {
		t.Fatalf("responses %q", responses)
	}
}

// fixedLLM calls post with the same arguments turns times.
type fixedLLM struct {
	turns int
}

func (m *fixedLLM) Name() string { return "fixed" }

func (m *fixedLLM) GenerateContent(_ context.Context, _ *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if m.turns == 0 {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		m.turns--
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{FunctionCall: &genai.FunctionCall{ID: fmt.Sprint("c", m.turns), Name: "post", Args: map[string]any{"title": "x"}}}}}}, nil)
	}
}
