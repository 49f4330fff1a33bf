package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// Two processes guard one run on a shared store (here one in memory
// standing in for Redis or PostgreSQL): the first allows a call that
// awaits its user's input; the user's answer reaches the second, which
// ends the call. It is decided and reserved once, and settled once.
func ExampleGuard_Resume() {
	ctx := context.Background()
	store := agent.NewMemoryLedgerStore(nil)
	first, err := agent.NewGuard(nil, &agent.GuardOptions{Store: store, BudgetUSD: "1"})
	if err != nil {
		panic(err)
	}
	second, err := agent.NewGuard(nil, &agent.GuardOptions{Store: store, BudgetUSD: "1"})
	if err != nil {
		panic(err)
	}
	p, _, err := first.Begin(ctx, preflight.ToolCallRequest{
		RunID: "run-9", StepID: "s1",
		Tool: preflight.ToolCall{Provider: "search", Operation: "web_search",
			Request: json.RawMessage(`{"query":"refund policy"}`), EstimatedExternalCostUSD: "0.02"},
	})
	if err != nil || p == nil {
		panic(fmt.Sprint("not allowed: ", err))
	}
	wire, err := json.Marshal(p.Handoff()) // kept where the second process finds it
	if err != nil {
		panic(err)
	}

	var h agent.Handoff
	if err := json.Unmarshal(wire, &h); err != nil {
		panic(err)
	}
	q, err := second.Resume(h)
	if err != nil {
		panic(err)
	}
	p.Forget() // the first process lets go: the second ends the call
	rep, err := q.End(agent.Completion{ResultReference: "mem:1"}, nil)
	if err != nil {
		panic(err)
	}
	st, err := store.State(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("verdict:", rep.Decision.Verdict, "settled:", rep.SettledUSD, "recorded:", rep.Recorded)
	fmt.Println("spent:", st.Balance.SpentUSD, "held:", st.Balance.ReservedUSD, "calls:", st.Balance.Calls, "history:", len(st.History))
	// Output:
	// verdict: allow settled: 0.02 recorded: true
	// spent: 0.02 held: 0 calls: 1 history: 1
}

// TestResumeMalformed: a Handoff without its reservation, decision or
// fingerprint, or with an estimate that is not a non-negative decimal, is
// refused.
func TestResumeMalformed(t *testing.T) {
	g, err := agent.NewGuard(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := agent.Handoff{ReservationID: "r1", EstimateUSD: "0.1", Decision: &preflight.ToolCallDecision{RequestFingerprint: "sha256:x"}}
	if _, err := g.Resume(ok); err != nil {
		t.Fatalf("a well-formed Handoff: %v", err)
	}
	tests := []struct {
		name string
		edit func(*agent.Handoff)
		want string
	}{
		{"no reservation", func(h *agent.Handoff) { h.ReservationID = "" }, "ReservationID"},
		{"no decision", func(h *agent.Handoff) { h.Decision = nil }, "RequestFingerprint"},
		{"no fingerprint", func(h *agent.Handoff) { h.Decision = &preflight.ToolCallDecision{} }, "RequestFingerprint"},
		{"negative estimate", func(h *agent.Handoff) { h.EstimateUSD = "-1" }, "EstimateUSD"},
		{"no estimate", func(h *agent.Handoff) { h.EstimateUSD = "" }, "EstimateUSD"},
		{"not a number", func(h *agent.Handoff) { h.EstimateUSD = "0x10" }, "EstimateUSD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := ok
			tt.edit(&h)
			if _, err := g.Resume(h); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Resume: %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

// TestForgetLeavesTheStore: a Permit forgotten leaves its reservation held
// in the store, for the process that resumed it; its End and Release do
// nothing afterwards.
func TestForgetLeavesTheStore(t *testing.T) {
	ctx := context.Background()
	store := agent.NewMemoryLedgerStore(nil)
	g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: store, BudgetUSD: "1"})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := g.Begin(ctx, preflight.ToolCallRequest{RunID: "run-1", StepID: "s1",
		Tool: preflight.ToolCall{Provider: "search", Operation: "web_search", Request: json.RawMessage(`{"query":"go"}`), EstimatedExternalCostUSD: "0.3"}})
	if err != nil || p == nil {
		t.Fatalf("not allowed: %v", err)
	}
	p.Forget()
	p.Release()
	if _, err := p.End(agent.Completion{}, nil); err == nil {
		t.Fatal("End after Forget: no error")
	}
	st, err := store.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Balance.ReservedUSD != "0.3" || st.Balance.SpentUSD != "0" || len(st.History) != 0 {
		t.Fatalf("balance %+v, %d entries; want 0.3 held, nothing spent or recorded", st.Balance, len(st.History))
	}
}
