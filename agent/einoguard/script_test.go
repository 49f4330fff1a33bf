package einoguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// scriptedModel stands in for the language model, the one part of an
// agent a test cannot run: it emits the tool calls of the script's next
// turn and records the tool results it is given.
type scriptedModel struct{ rec *agenttest.Recorder }

func (m *scriptedModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	for _, msg := range in {
		if msg.Role == schema.Tool {
			m.rec.Result(msg.ToolCallID, []byte(msg.Content))
		}
	}
	calls := m.rec.Next()
	if calls == nil {
		return schema.AssistantMessage("done", nil), nil
	}
	return assistant(calls), nil
}

func (m *scriptedModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *scriptedModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}

func assistant(calls []agenttest.Call) *schema.Message {
	tc := make([]schema.ToolCall, len(calls))
	for i, c := range calls {
		tc[i] = schema.ToolCall{ID: c.ID, Type: "function", Function: schema.FunctionCall{Name: c.Tool, Arguments: c.Args}}
	}
	return schema.AssistantMessage("", tc)
}

// scriptTools are the script's three tools as eino tools.
func scriptTools(t *testing.T, ts *agenttest.Tools) []tool.BaseTool {
	t.Helper()
	q, err := utils.InferTool(agenttest.Quote, "Real-time quote (billed per call).", func(_ context.Context, in agenttest.QuoteArgs) (map[string]any, error) {
		return ts.QuoteRun(in.Symbol), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tk, err := utils.InferTool(agenttest.Ticket, "Create a ticket.", func(_ context.Context, in agenttest.TicketArgs) (map[string]any, error) {
		return ts.TicketRun(in.Title), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := utils.InferTool(agenttest.Flaky, "Search an index.", func(_ context.Context, in agenttest.SearchArgs) (map[string]any, error) {
		return ts.FlakyRun(in.Q), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return []tool.BaseTool{q, tk, f}
}

func newGuard(t *testing.T) *einoguard.Guard {
	t.Helper()
	g, err := einoguard.New(&einoguard.Options{BudgetUSD: agenttest.BudgetUSD, Specs: agenttest.Specs(), Classify: agenttest.Classify})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestReActScript runs the scripted session through a real ReAct agent,
// with the tool calls of a turn in parallel (eino's default) and in
// sequence: one Generate, which no decision may abort.
func TestReActScript(t *testing.T) {
	for _, sequential := range []bool{false, true} {
		t.Run(fmt.Sprintf("sequential=%v", sequential), func(t *testing.T) {
			ctx := context.Background()
			ts := agenttest.NewTools()
			rec := agenttest.NewRecorder(ts)
			g := newGuard(t)
			ag, err := react.NewAgent(ctx, &react.AgentConfig{
				ToolCallingModel: &scriptedModel{rec},
				ToolsConfig: compose.ToolsNodeConfig{
					Tools:               scriptTools(t, ts),
					ExecuteSequentially: sequential,
					ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()},
				},
				MaxStep: 100,
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := ag.Generate(ctx, []*schema.Message{schema.UserMessage("go")})
			if err != nil {
				t.Fatalf("the run was aborted: %v", err)
			}
			if out.Content != "done" {
				t.Fatalf("final message %q", out.Content)
			}
			t.Log(rec.Verify(t, g.Session().Guard()))
		})
	}
}

// TestToolsNodeScript drives a bare ToolsNode turn by turn, as a graph
// would, parallel and sequential.
func TestToolsNodeScript(t *testing.T) {
	for _, sequential := range []bool{false, true} {
		t.Run(fmt.Sprintf("sequential=%v", sequential), func(t *testing.T) {
			ctx := context.Background()
			ts := agenttest.NewTools()
			rec := agenttest.NewRecorder(ts)
			g := newGuard(t)
			tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
				Tools:               scriptTools(t, ts),
				ExecuteSequentially: sequential,
				ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()},
			})
			if err != nil {
				t.Fatal(err)
			}
			for calls := rec.Next(); calls != nil; calls = rec.Next() {
				out, err := tn.Invoke(ctx, assistant(calls))
				if err != nil {
					t.Fatalf("turn %v: the ToolsNode failed: %v", calls, err)
				}
				for _, m := range out {
					rec.Result(m.ToolCallID, []byte(m.Content))
				}
			}
			t.Log(rec.Verify(t, g.Session().Guard()))
		})
	}
}

// statusError is a tool's Go error carrying an HTTP status.
type statusError int

func (e statusError) Error() string   { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusError) StatusCode() int { return int(e) }

// TestToolErrorPassesThrough: a tool's own Go error is the tool's
// business: passed on unchanged and classified by agent.ClassifyError; a
// terminal one is then not retried, and the withheld retry is a result,
// not an error.
func TestToolErrorPassesThrough(t *testing.T) {
	ctx := context.Background()
	runs := 0
	failing, err := utils.InferTool("post", "Post.", func(_ context.Context, in agenttest.TicketArgs) (string, error) {
		runs++
		return "", statusError(404)
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := einoguard.New(&einoguard.Options{Specs: []tools.Spec{{Operation: preflight.Operation{Name: "post", Effects: preflight.EffectsSideEffecting}}}})
	if err != nil {
		t.Fatal(err)
	}
	tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: []tool.BaseTool{failing},
		ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	call := assistant([]agenttest.Call{{ID: "1", Tool: "post", Args: `{"title":"x"}`}})
	if _, err := tn.Invoke(ctx, call); !errors.As(err, new(statusError)) {
		t.Fatalf("first call: error %v, want the tool's own", err)
	}
	out, err := tn.Invoke(ctx, call)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if runs != 1 || len(out) != 1 || !strings.Contains(out[0].Content, `"RETRY_CAP_REACHED"`) {
		t.Fatalf("runs %d, out %v", runs, out[0].Content)
	}
}
