package genkitguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// TestApprovals is the approval session through genkit.Generate, only the
// model scripted (defineScriptedModel, a stand-in for the language model):
// send_email needs a person's approval (agenttest.ApprovalSpecs) and the
// guard asks it with a Genkit tool interrupt carrying the exact call. A
// person approves the first email (a restart with {"approve": true}),
// which is then sent once and charged once; declines the second (a
// restart with {"approve": false}), which runs nothing; approves a third
// whose input the restart replaced (ai.WithNewInput: Genkit itself lets a
// restart change the arguments), which runs nothing; and the first
// approval restarted again on the history it was given for (replayed)
// runs nothing. No money is reserved while a call waits.
func TestApprovals(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	sc := agenttest.NewScenario()
	store := agenttest.NewArrivals()
	email := func(id, to string) []agenttest.Call {
		return []agenttest.Call{{ID: id, Tool: agenttest.Email, Args: `{"to":"` + to + `"}`}}
	}
	next := turns(email("e1", "a@x.io"), email("e2", "b@x.io"), email("e3", "c@x.io"))
	results := map[string]string{}
	m := defineScriptedModel(g, "approvals", next, func(id string, b []byte) { results[id] = string(b) })
	guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ApprovalSpecs(), LedgerStore: store})
	if err != nil {
		t.Fatal(err)
	}
	tools := defineScenarioTools(g, sc, false)
	sendEmail := tools[1].(*ai.ToolAction[agenttest.EmailArgs, map[string]any])

	// asked returns the one interrupt resp ends with, checking what it
	// shows the person.
	asked := func(resp *ai.ModelResponse, to string) *ai.Part {
		t.Helper()
		in := resp.Interrupts()
		if resp.FinishReason != ai.FinishReasonInterrupted || len(in) != 1 {
			t.Fatalf("finish %s, interrupts %d; want the approval of the email to %s asked", resp.FinishReason, len(in), to)
		}
		b, _ := json.Marshal(in[0].Metadata["interrupt"])
		var ap struct {
			adapt.Approval
			Message string `json:"message"`
		}
		if err := json.Unmarshal(b, &ap); err != nil {
			t.Fatal(err)
		}
		if ap.Tool != agenttest.Email || string(ap.Arguments) != `{"to":"`+to+`"}` || ap.EstimatedCostUSD != agenttest.EmailPrice ||
			ap.Reason == "" || ap.RequestFingerprint == "" || ap.Ticket == "" || !strings.Contains(ap.Message, to) {
			t.Fatalf("the interrupt shows %s", b)
		}
		return in[0]
	}
	check := func(when string, emails int, spent string) {
		t.Helper()
		bal := store.Balance(t)
		if n := sc.Counts()[agenttest.Email]; n != emails || bal.SpentUSD != json.Number(spent) || bal.ReservedUSD != "0" {
			t.Fatalf("%s: emails sent %d, balance %+v; want %d sent, %s spent, nothing reserved", when, n, bal, emails, spent)
		}
	}
	restart := func(history []*ai.Message, p *ai.Part, opts ...ai.RestartWithOption[agenttest.EmailArgs]) *ai.ModelResponse {
		t.Helper()
		r, err := sendEmail.RestartWith(p, opts...)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithMessages(history...), ai.WithTools(tools...), ai.WithUse(guard),
			ai.WithToolRestarts(r))
		if err != nil {
			t.Fatalf("the restarted Generate: %v", err)
		}
		return resp
	}
	approval := func(id string) string {
		var w struct {
			Preflight struct{ Approval string }
		}
		json.Unmarshal([]byte(results[id]), &w)
		return w.Preflight.Approval
	}
	yes := ai.WithResumedMetadata[agenttest.EmailArgs](map[string]any{genkitguard.ApprovalKey: true})

	first, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(tools...), ai.WithUse(guard))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	p1 := asked(first, "a@x.io")
	check("the first email asked", 0, "0")

	resp := restart(first.History(), p1, yes)
	if results["e1"] != `{"sent":"a@x.io"}` {
		t.Fatalf("the model read %s for the approved email", results["e1"])
	}
	check("the first email approved", 1, agenttest.EmailPrice)
	p2 := asked(resp, "b@x.io")

	resp = restart(resp.History(), p2, ai.WithResumedMetadata[agenttest.EmailArgs](map[string]any{genkitguard.ApprovalKey: false}))
	if approval("e2") != adapt.ApprovalDeclined {
		t.Fatalf("the model read %s for the declined email", results["e2"])
	}
	check("the second email declined", 1, agenttest.EmailPrice)
	p3 := asked(resp, "c@x.io")

	resp = restart(resp.History(), p3, yes, ai.WithNewInput(agenttest.EmailArgs{To: "mallory@x.io"}))
	if approval("e3") != adapt.ApprovalInvalid || resp.Text() != "done" {
		t.Fatalf("the model read %s for the altered email; the Generate ended %q", results["e3"], resp.Text())
	}
	check("an altered approval", 1, agenttest.EmailPrice)

	// The first approval again, with its ticket, on the history it was
	// asked in.
	delete(results, "e1")
	ticket := p1.Metadata["interrupt"].(map[string]any)["ticket"]
	restart(first.History(), p1, ai.WithResumedMetadata[agenttest.EmailArgs](map[string]any{genkitguard.ApprovalKey: true, "ticket": ticket}))
	if approval("e1") != adapt.ApprovalInvalid {
		t.Fatalf("the model read %s for the replayed approval", results["e1"])
	}
	check("the first approval replayed", 1, agenttest.EmailPrice)
}
