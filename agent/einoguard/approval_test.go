package einoguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
)

// TestApprovals is the approval session through eino's ChatModelAgent,
// Runner and checkpoints, only the model scripted (nextModel, a stand-in
// for the language model): send_email needs a person's approval
// (agenttest.ApprovalSpecs) and the guard asks it with an eino interrupt
// (tool.StatefulInterrupt) whose info is the exact call. A person approves
// the first email (Runner.ResumeWithParams with true), which is then sent
// once and charged once; declines the second (false), which runs nothing;
// approves a third whose arguments were altered in the stored checkpoint,
// which runs nothing; and the first approval resumed again from a copy of
// its checkpoint (replayed) runs nothing. No money is reserved while a
// call waits.
func TestApprovals(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	store := agenttest.NewArrivals()
	g, err := einoguard.New(&einoguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ApprovalSpecs(), LedgerStore: store})
	if err != nil {
		t.Fatal(err)
	}
	email := func(id, to string) []agenttest.Call {
		return []agenttest.Call{{ID: id, Tool: agenttest.Email, Args: `{"to":"` + to + `"}`}}
	}
	read := map[string]string{}
	var mu sync.Mutex
	ag, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "assistant", Description: "sends approved emails",
		Model: &nextModel{turns(email("e1", "a@x.io"), email("e2", "b@x.io"), email("e3", "c@x.io")), func(id string, b []byte) {
			mu.Lock()
			read[id] = string(b)
			mu.Unlock()
		}},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools: scenarioTools(t, sc, false, func(t tool.BaseTool) tool.BaseTool { return t }), ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cps := &memStore{m: map[string][]byte{}}
	r := adk.NewRunner(ctx, adk.RunnerConfig{Agent: ag, CheckPointStore: cps})

	// drain returns the interrupt the run ended with, checking what it
	// shows the person, or "" when it ended otherwise.
	drain := func(events *adk.AsyncIterator[*adk.AgentEvent], to string) string {
		t.Helper()
		var id, info string
		for {
			ev, ok := events.Next()
			if !ok {
				break
			}
			if ev.Err != nil {
				t.Fatalf("the run was aborted: %v", ev.Err)
			}
			if ev.Action != nil && ev.Action.Interrupted != nil {
				for _, ic := range ev.Action.Interrupted.InterruptContexts {
					if ic.IsRootCause {
						id = ic.ID
						info, _ = ic.Info.(string)
					}
				}
			}
		}
		if to == "" {
			if id != "" {
				t.Fatalf("the run ended with the interrupt %s", info)
			}
			return ""
		}
		var ap adapt.Approval
		if id == "" || json.Unmarshal([]byte(info), &ap) != nil || ap.Tool != agenttest.Email || string(ap.Arguments) != `{"to":"`+to+`"}` ||
			ap.EstimatedCostUSD != agenttest.EmailPrice || ap.Reason == "" || ap.RequestFingerprint == "" || ap.Ticket == "" {
			t.Fatalf("interrupt %q shows %q; want the approval of the email to %s", id, info, to)
		}
		return id
	}
	resume := func(id string, yes bool, to string) string {
		t.Helper()
		events, err := r.ResumeWithParams(ctx, "c1", &adk.ResumeParams{Targets: map[string]any{id: yes}})
		if err != nil {
			t.Fatal(err)
		}
		return drain(events, to)
	}
	check := func(when string, emails int, spent string) {
		t.Helper()
		bal := store.Balance(t)
		if n := sc.Counts()[agenttest.Email]; n != emails || bal.SpentUSD != json.Number(spent) || bal.ReservedUSD != "0" {
			t.Fatalf("%s: emails sent %d, balance %+v; want %d sent, %s spent, nothing reserved", when, n, bal, emails, spent)
		}
	}
	approval := func(id string) string {
		var w struct {
			Preflight struct{ Approval string }
		}
		json.Unmarshal([]byte(read[id]), &w)
		return w.Preflight.Approval
	}
	snapshot := func() []byte {
		b, ok, _ := cps.Get(ctx, "c1")
		if !ok {
			t.Fatal("no checkpoint c1")
		}
		return bytes.Clone(b)
	}

	id1 := drain(r.Query(ctx, "go", adk.WithCheckPointID("c1")), "a@x.io")
	check("the first email asked", 0, "0")
	first := snapshot()

	id2 := resume(id1, true, "b@x.io")
	if read["e1"] != `{"sent":"a@x.io"}` {
		t.Fatalf("the model read %q for the approved email", read["e1"])
	}
	check("the first email approved", 1, agenttest.EmailPrice)

	id3 := resume(id2, false, "c@x.io")
	if approval("e2") != adapt.ApprovalDeclined {
		t.Fatalf("the model read %q for the declined email", read["e2"])
	}
	check("the second email declined", 1, agenttest.EmailPrice)

	// The stored checkpoint altered: the third email goes to another
	// recipient (of the same length, so that it still decodes).
	cp := snapshot()
	altered := bytes.ReplaceAll(cp, []byte("c@x.io"), []byte("m@x.io"))
	if bytes.Equal(altered, cp) {
		t.Fatal("the checkpoint does not hold the recipient as text")
	}
	cps.Set(ctx, "c1", altered)
	resume(id3, true, "")
	if approval("e3") != adapt.ApprovalInvalid {
		t.Fatalf("the model read %q for the altered email", read["e3"])
	}
	check("an altered approval", 1, agenttest.EmailPrice)

	// The first approval again, from a copy of its checkpoint.
	delete(read, "e1")
	cps.Set(ctx, "c1", first)
	resume(id1, true, "")
	if approval("e1") != adapt.ApprovalInvalid {
		t.Fatalf("the model read %q for the replayed approval", read["e1"])
	}
	check("the first approval replayed", 1, agenttest.EmailPrice)
}
