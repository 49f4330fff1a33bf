package einoguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// TestDeferAsInterrupt: with InterruptOnDefer, an email over the budget
// ($0.06 holds one $0.04 email, not two) interrupts the run with the
// decision, unsent and uncharged; once a person raised the budget
// (agent.Guard.RaiseBudget), the resumed run decides the call again and
// sends it, charged once. Only the model is scripted; the
// ChatModelAgent, Runner and checkpoints are eino's.
func TestDeferAsInterrupt(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	email, err := utils.InferTool(agenttest.Email, "Send an email (billed).", func(_ context.Context, in agenttest.EmailArgs) (map[string]any, error) {
		return sc.EmailRun(in.To)
	})
	if err != nil {
		t.Fatal(err)
	}
	g, err := einoguard.New(&einoguard.Options{BudgetUSD: agenttest.ApprovalBudgetUSD, Specs: agenttest.ScenarioSpecs(), InterruptOnDefer: true})
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]string{}
	ag, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "assistant", Description: "sends emails",
		Model: &nextModel{turns([]agenttest.Call{{ID: "e1", Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}},
			[]agenttest.Call{{ID: "e2", Tool: agenttest.Email, Args: `{"to":"b@x.io"}`}}), func(id string, b []byte) { read[id] = string(b) }},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools: []tool.BaseTool{email}, ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()},
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
	// drain returns the interrupt's info, if any, and the last assistant text.
	drain := func(events *adk.AsyncIterator[*adk.AgentEvent]) (info, last string) {
		for {
			ev, ok := events.Next()
			if !ok {
				return info, last
			}
			if ev.Err != nil {
				t.Fatalf("the run was aborted: %v", ev.Err)
			}
			if ev.Action != nil && ev.Action.Interrupted != nil {
				for _, ic := range ev.Action.Interrupted.InterruptContexts {
					if ic.IsRootCause {
						info, _ = ic.Info.(string)
					}
				}
			}
			if m := ev.Output; m != nil && m.MessageOutput != nil && m.MessageOutput.Message != nil && m.MessageOutput.Message.Role == schema.Assistant {
				last = m.MessageOutput.Message.Content
			}
		}
	}
	info, _ := drain(r.Query(ctx, "go", adk.WithCheckPointID("c1")))
	if !strings.Contains(info, `"decision":"defer"`) || !strings.Contains(info, "BUDGET_EXCEEDED") || sc.Counts()[agenttest.Email] != 1 || spent() != agenttest.EmailPrice {
		t.Fatalf("interrupt %q, sent %d, spent %s; want a deferral interrupt, 1 sent, %s", info, sc.Counts()[agenttest.Email], spent(), agenttest.EmailPrice)
	}
	if _, err := g.Session().Guard().RaiseBudget("0.04"); err != nil {
		t.Fatal(err)
	}
	events, err := r.Resume(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, last := drain(events); last != "done" || sc.Counts()[agenttest.Email] != 2 || spent() != "0.08" || read["e2"] != `{"sent":"b@x.io"}` {
		t.Fatalf("resumed: ended %q, sent %d, spent %s, e2 read %q; want done, 2, 0.08, the email sent", last, sc.Counts()[agenttest.Email], spent(), read["e2"])
	}
}
