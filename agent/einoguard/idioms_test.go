package einoguard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// nextModel stands in for the language model, the only part of these
// sessions that is scripted: each turn it asks for the tool calls next
// returns, and answers "done" once next returns nil; it hands the tool
// results it reads to result, when set.
type nextModel struct {
	next   func() []agenttest.Call
	result func(id string, b []byte)
}

func (m *nextModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	for _, msg := range in {
		if msg.Role == schema.Tool && m.result != nil {
			m.result(msg.ToolCallID, []byte(msg.Content))
		}
	}
	calls := m.next()
	if calls == nil {
		return schema.AssistantMessage("done", nil), nil
	}
	return assistant(calls), nil
}

func (m *nextModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *nextModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

// scenarioTools are the idiom scenario's four tools as eino tools, each
// passed through wrap.
func scenarioTools(t *testing.T, sc *agenttest.Scenario, inBand bool, wrap func(tool.BaseTool) tool.BaseTool) []tool.BaseTool {
	t.Helper()
	out := func(res map[string]any, err error) (map[string]any, error) {
		if err != nil && inBand {
			return map[string]any{"error": err.Error()}, nil
		}
		return res, err
	}
	var ts []tool.BaseTool
	add := func(tl tool.InvokableTool, err error) {
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, wrap(tl))
	}
	add(utils.InferTool(agenttest.Search, "Search the web (billed).", func(_ context.Context, in agenttest.SearchArgs) (map[string]any, error) {
		return out(sc.SearchRun(in.Q))
	}))
	add(utils.InferTool(agenttest.Email, "Send an email (billed).", func(_ context.Context, in agenttest.EmailArgs) (map[string]any, error) {
		return out(sc.EmailRun(in.To))
	}))
	add(utils.InferTool(agenttest.Fetch, "Fetch a page.", func(_ context.Context, in agenttest.FetchArgs) (map[string]any, error) {
		return out(sc.FetchRun(in.URL))
	}))
	add(utils.InferTool(agenttest.File, "File a ticket.", func(_ context.Context, in agenttest.TicketArgs) (map[string]any, error) {
		return out(sc.FileRun(in.Title))
	}))
	return ts
}

// TestIdioms plays the idiom scenario (a priced read-only search, a
// side-effecting email, a fetch that fails with a 503 once, a ticket tool
// that always fails with a 422) through a real ReAct agent, only the
// model scripted, with each way an eino agent keeps a tool's error from
// ending the run, the guard with no Classify: the tools must run
// 5 / 2 / 2 / 1 times in every one.
func TestIdioms(t *testing.T) {
	handler := func(h utils.ErrorHandler) func(tool.BaseTool) tool.BaseTool {
		return func(t tool.BaseTool) tool.BaseTool { return utils.WrapToolWithErrorHandler(t, h) }
	}
	plain := func(t tool.BaseTool) tool.BaseTool { return t }
	for _, c := range []struct {
		name   string
		inBand bool
		wrap   func(tool.BaseTool) tool.BaseTool
		errors string // where einoguard.ErrorsToModel goes: "outside" or "inside" the guard
	}{
		{name: "ErrorsToModel outside the guard", wrap: plain, errors: "outside"},
		{name: "ErrorsToModel inside the guard", wrap: plain, errors: "inside"},
		{name: "WrapToolWithErrorHandler, the error's text", wrap: handler(func(_ context.Context, err error) string { return err.Error() })},
		{name: "WrapToolWithErrorHandler, own words", wrap: handler(func(_ context.Context, err error) string {
			return fmt.Sprintf("the tool failed (%v); try something else", err)
		})},
		{name: "tools return {error}", inBand: true, wrap: plain},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			sc := agenttest.NewScenario()
			g, err := einoguard.New(&einoguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
			if err != nil {
				t.Fatal(err)
			}
			ag, err := react.NewAgent(ctx, &react.AgentConfig{
				ToolCallingModel: &nextModel{sc.Next, sc.Result},
				ToolsConfig: compose.ToolsNodeConfig{
					Tools: scenarioTools(t, sc, c.inBand, c.wrap),
					ToolCallMiddlewares: map[string][]compose.ToolMiddleware{
						"":        {g.Middleware()},
						"outside": {einoguard.ErrorsToModel(), g.Middleware()},
						"inside":  {g.Middleware(), einoguard.ErrorsToModel()},
					}[c.errors],
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
			t.Log(sc.Verify(t, g.Session().Guard()))
		})
	}
}

// memStore is an in-memory adk.CheckPointStore.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[id]
	return b, ok, nil
}

func (s *memStore) Set(_ context.Context, id string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = b
	return nil
}

// TestInterruptResume: a tool that asks a person first (tool.Interrupt)
// is neither a failure nor a charge; resumed with the approval
// (Runner.ResumeWithParams), the email is sent and charged once, on a
// budget ($0.06) that holds one $0.04 email but not two. Only the model
// is scripted; the ChatModelAgent, Runner and checkpoints are eino's.
func TestInterruptResume(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	email, err := utils.InferTool(agenttest.Email, "Send an email (billed; a person approves it).",
		func(ctx context.Context, in agenttest.EmailArgs) (map[string]any, error) {
			resumed, _, approved := tool.GetResumeContext[bool](ctx)
			if !resumed {
				return nil, tool.Interrupt(ctx, "send an email to "+in.To+"?")
			}
			if !approved {
				return map[string]any{"sent": false}, nil
			}
			return sc.EmailRun(in.To)
		})
	if err != nil {
		t.Fatal(err)
	}
	g, err := einoguard.New(&einoguard.Options{BudgetUSD: agenttest.ApprovalBudgetUSD, Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	turns := [][]agenttest.Call{{{ID: "e1", Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}}}
	next := func() []agenttest.Call {
		if len(turns) == 0 {
			return nil
		}
		c := turns[0]
		turns = turns[1:]
		return c
	}
	ag, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "assistant", Description: "sends an approved email", Model: &nextModel{next: next},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools:               []tool.BaseTool{email},
			ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := adk.NewRunner(ctx, adk.RunnerConfig{Agent: ag, CheckPointStore: &memStore{m: map[string][]byte{}}})
	spent := func() string {
		s, err := g.Session().Guard().SpentUSD(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(s)
	}
	// drain returns the interrupt's id, if any, and the last assistant text.
	drain := func(events *adk.AsyncIterator[*adk.AgentEvent]) (interrupt, last string) {
		for {
			ev, ok := events.Next()
			if !ok {
				return interrupt, last
			}
			if ev.Err != nil {
				t.Fatalf("the run was aborted: %v", ev.Err)
			}
			if ev.Action != nil && ev.Action.Interrupted != nil {
				for _, ic := range ev.Action.Interrupted.InterruptContexts {
					if ic.IsRootCause {
						interrupt = ic.ID
					}
				}
			}
			if ev.Output != nil && ev.Output.MessageOutput != nil && ev.Output.MessageOutput.Message != nil &&
				ev.Output.MessageOutput.Message.Role == schema.Assistant {
				last = ev.Output.MessageOutput.Message.Content
			}
		}
	}
	id, _ := drain(r.Query(ctx, "go", adk.WithCheckPointID("c1")))
	if id == "" || sc.Counts()[agenttest.Email] != 0 || spent() != "0" {
		t.Fatalf("interrupt %q, sent %d, spent %s; want an interrupt, nothing sent or charged", id, sc.Counts()[agenttest.Email], spent())
	}
	events, err := r.ResumeWithParams(ctx, "c1", &adk.ResumeParams{Targets: map[string]any{id: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, last := drain(events); last != "done" || sc.Counts()[agenttest.Email] != 1 || spent() != agenttest.EmailPrice {
		t.Fatalf("ended with %q, sent %d, spent %s; want done, 1, %s", last, sc.Counts()[agenttest.Email], spent(), agenttest.EmailPrice)
	}
}

// TestDuplicateCallIDs: two tool calls of one model turn that share an
// id (a provider's bug) are two calls, each run, charged and answered
// with its own result, in every one of 12 runs of a real ToolsNode.
func TestDuplicateCallIDs(t *testing.T) {
	ctx := context.Background()
	for i := range 12 {
		sc := agenttest.NewScenario()
		g, err := einoguard.New(&einoguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
		if err != nil {
			t.Fatal(err)
		}
		tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
			Tools:               scenarioTools(t, sc, false, func(t tool.BaseTool) tool.BaseTool { return t }),
			ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()},
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := tn.Invoke(ctx, assistant([]agenttest.Call{
			{ID: "dup", Tool: agenttest.Search, Args: `{"q":"alpha"}`}, {ID: "dup", Tool: agenttest.Search, Args: `{"q":"beta"}`}}))
		if err != nil {
			t.Fatal(err)
		}
		spent, _ := g.Session().Guard().SpentUSD(ctx)
		if n := sc.Counts()[agenttest.Search]; n != 2 || spent != "0.02" || len(out) != 2 {
			t.Fatalf("run %d: searches %d, spent %s, results %d; want 2, 0.02, 2", i, n, spent, len(out))
		}
		if !strings.Contains(out[0].Content, `"q":"alpha"`) || !strings.Contains(out[1].Content, `"q":"beta"`) {
			t.Fatalf("run %d: results crossed: %s, %s", i, out[0].Content, out[1].Content)
		}
	}
}
