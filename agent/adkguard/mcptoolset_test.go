package adkguard_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	adkagent "google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/mcptoolset"
	"google.golang.org/genai"
)

// turnsLLM is a scripted model (the one part out of reach of a test): one
// function call per turn, then "done".
type turnsLLM struct{ calls []*genai.FunctionCall }

func (m *turnsLLM) Name() string { return "turns" }

func (m *turnsLLM) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if len(m.calls) == 0 {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		c := m.calls[0]
		m.calls = m.calls[1:]
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: c}}}}, nil)
	}
}

// TestMCPToolsetOnGuardedClient: ADK's MCP toolset built on a go-sdk
// client guarded by mcpguard is guarded without adkguard: a repeated
// quote is reused, a failed ticket is not sent again.
func TestMCPToolsetOnGuardedClient(t *testing.T) {
	ctx := context.Background()
	srv, counts := mcptest.NewServer("")
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "adk", Version: "1.0.0"}, nil)
	client.AddSendingMiddleware(mcpguard.Client(mcptest.ScriptGuard()))
	set, err := mcptoolset.New(mcptoolset.Config{Client: client, Transport: ct})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, name, args string) *genai.FunctionCall {
		var m map[string]any
		json.Unmarshal([]byte(args), &m)
		return &genai.FunctionCall{ID: id, Name: name, Args: m}
	}
	llm := &turnsLLM{calls: []*genai.FunctionCall{
		call("1", mcptest.Quote, `{"symbol":"AAA"}`), call("2", mcptest.Quote, `{"symbol":"AAA"}`),
		call("3", mcptest.Ticket, `{"title":"disk full"}`), call("4", mcptest.Ticket, `{"title":"disk full"}`),
	}}
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: llm, Toolsets: []tool.Toolset{set}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "t", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	responses := map[string]string{}
	for ev, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("go", genai.RoleUser), adkagent.RunConfig{}) {
		if err != nil {
			t.Fatalf("run aborted: %v", err)
		}
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				b, _ := json.Marshal(p.FunctionResponse.Response)
				responses[p.FunctionResponse.ID] = string(b)
			}
		}
	}
	if got := counts.Snapshot(); got[mcptest.Quote] != 1 || got[mcptest.Ticket] != 1 {
		t.Fatalf("upstream executions %v, want one quote and one ticket", got)
	}
	if responses["1"] != responses["2"] || !strings.Contains(responses["4"], "not run: ") {
		t.Fatalf("responses %v", responses)
	}
}
