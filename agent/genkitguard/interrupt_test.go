package genkitguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// TestDeferAsInterrupt: with InterruptOnDefer, a quote over the budget
// ends the Generate as a Genkit interrupt carrying the decision, not as
// an error and not as a response the model reads; the tool is not run.
// Once the budget is raised (agent.Guard.RaiseBudget), the restarted
// call is decided again, runs and is charged once.
func TestDeferAsInterrupt(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	ts := agenttest.NewTools()
	next := turns([][]agenttest.Call{
		{{ID: "a", Tool: agenttest.Quote, Args: `{"symbol":"AAA"}`}},
		{{ID: "b", Tool: agenttest.Quote, Args: `{"symbol":"BBB"}`}},
	}...)
	m := defineScriptedModel(g, "defer", next, func(string, []byte) {})
	guard, err := genkitguard.New(&genkitguard.Options{
		BudgetUSD:        "0.15",
		Specs:            agenttest.Specs(),
		InterruptOnDefer: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	tools := defineTools(g, ts)
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(tools...), ai.WithUse(guard))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.FinishReason != ai.FinishReasonInterrupted {
		t.Fatalf("finish reason %q, want interrupted", resp.FinishReason)
	}
	in := resp.Interrupts()
	if len(in) != 1 || in[0].ToolRequest.Ref != "b" {
		t.Fatalf("interrupts %+v", in)
	}
	b, _ := json.Marshal(in[0].Metadata["interrupt"])
	var w struct {
		Error     string
		Preflight struct {
			Decision    preflight.Verdict
			ReasonCodes []preflight.ReasonCode
		}
	}
	json.Unmarshal(b, &w)
	if w.Preflight.Decision != preflight.VerdictDefer || len(w.Preflight.ReasonCodes) == 0 ||
		w.Preflight.ReasonCodes[0] != preflight.ReasonBudgetExceeded || w.Error == "" {
		t.Fatalf("interrupt metadata %s", b)
	}
	if n := ts.Counts()[agenttest.Quote]; n != 1 {
		t.Fatalf("quote ran %d times, want 1", n)
	}
	if _, err := guard.Session().Guard().RaiseBudget("0.10"); err != nil {
		t.Fatal(err)
	}
	restart, err := tools[0].(*ai.ToolAction[agenttest.QuoteArgs, map[string]any]).RestartWith(in[0])
	if err != nil {
		t.Fatal(err)
	}
	resp, err = genkit.Generate(ctx, g, ai.WithModel(m), ai.WithMessages(resp.History()...), ai.WithTools(tools...), ai.WithUse(guard),
		ai.WithToolRestarts(restart))
	spent, _ := guard.Session().Guard().SpentUSD(ctx)
	if err != nil || resp.Text() != "done" || ts.Counts()[agenttest.Quote] != 2 || spent != "0.2" {
		t.Fatalf("the restarted Generate: %v, ended %q, quotes %d, spent %s; want done, 2, 0.2", err, resp.Text(), ts.Counts()[agenttest.Quote], spent)
	}
}

// TestInterruptRestart: a tool that asks a person first
// (ToolContext.Interrupt) is neither a failure nor a charge; restarted
// with the approval (Restart, ai.WithToolRestarts), the email is sent
// and charged once, on a budget ($0.06) that holds one $0.04 email but
// not two.
func TestInterruptRestart(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	sc := agenttest.NewScenario()
	email := genkit.DefineTool(g, agenttest.Email, "Send an email (billed; a person approves it).",
		func(tc *ai.ToolContext, in agenttest.EmailArgs) (map[string]any, error) {
			if !tc.IsResumed() {
				return nil, tc.Interrupt(&ai.InterruptOptions{Metadata: map[string]any{"approve": in.To}})
			}
			return sc.EmailRun(in.To)
		})
	next := turns([]agenttest.Call{{ID: "e1", Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}})
	results := map[string]string{}
	m := defineScriptedModel(g, "approve", next, func(id string, b []byte) { results[id] = string(b) })
	guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: agenttest.ApprovalBudgetUSD, Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(email), ai.WithUse(guard))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	spent := func() string {
		s, err := guard.Session().Guard().SpentUSD(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(s)
	}
	if resp.FinishReason != ai.FinishReasonInterrupted || len(resp.Interrupts()) != 1 || sc.Counts()[agenttest.Email] != 0 || spent() != "0" {
		t.Fatalf("finish %s, interrupts %d, sent %d, spent %s; want interrupted, 1, 0, 0",
			resp.FinishReason, len(resp.Interrupts()), sc.Counts()[agenttest.Email], spent())
	}
	restart, err := email.RestartWith(resp.Interrupts()[0], ai.WithResumedMetadata[agenttest.EmailArgs](map[string]any{"approved": true}))
	if err != nil {
		t.Fatal(err)
	}
	resp, err = genkit.Generate(ctx, g, ai.WithModel(m), ai.WithMessages(resp.History()...), ai.WithTools(email), ai.WithUse(guard),
		ai.WithToolRestarts(restart))
	if err != nil {
		t.Fatalf("the resumed Generate: %v", err)
	}
	if resp.Text() != "done" || sc.Counts()[agenttest.Email] != 1 || spent() != agenttest.EmailPrice {
		t.Fatalf("ended with %q, sent %d, spent %s; want done, 1, %s", resp.Text(), sc.Counts()[agenttest.Email], spent(), agenttest.EmailPrice)
	}
	if results["e1"] != `{"sent":"a@x.io"}` {
		t.Fatalf("the model read %s", results["e1"])
	}
}
