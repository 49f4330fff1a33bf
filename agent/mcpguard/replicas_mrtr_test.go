package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
)

// TestInputRequiredAcrossProcesses: two guards of one scope (two proxy
// replicas) share a ledger store and call claims; a multi-round trip whose
// rounds alternate between them (a load balancer that is not sticky) is
// one call: decided once (a call limit of 1 lets it finish), charged once,
// one history entry, and the server ran once per round. The guard that
// made the reservation does not end it a second time when its wait for the
// retry ends.
func TestInputRequiredAcrossProcesses(t *testing.T) {
	store := agent.NewMemoryLedgerStore(nil)
	claims := &memClaims{claims: map[string]mcpguard.Claim{}, until: map[string]time.Time{}}
	opts := &mcpguard.Options{BudgetUSD: "1", MaxCalls: 1, LedgerStore: store, Claims: claims,
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "ask"}, PriceUSD: "0.25"}}}
	a, b := exactlySession(t, opts), exactlySession(t, opts)
	answers := []string{
		`{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{}}},"requestState":"s1"}`,
		`{"resultType":"input_required","inputRequests":{"r":{"method":"elicitation/create","params":{}}},"requestState":"s2"}`,
		`{"content":[{"type":"text","text":"done"}]}`,
	}
	runs := 0
	ctx := context.Background()
	for i, round := range []struct {
		via    *mcpguard.Session
		params string
	}{
		{a, `{"name":"ask","arguments":{"x":1}}`},
		{b, `{"name":"ask","arguments":{"x":1},"inputResponses":{"q":{"action":"accept"}},"requestState":"s1"}`},
		{a, `{"name":"ask","arguments":{"x":1},"inputResponses":{"r":{"action":"accept"}},"requestState":"s2"}`},
	} {
		res, err := round.via.CallTool(ctx, json.RawMessage(round.params), func(context.Context) (json.RawMessage, error) {
			runs++
			return json.RawMessage(answers[runs-1]), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if string(res) != answers[i] {
			t.Fatalf("round %d: %s, want %s", i+1, res, answers[i])
		}
	}
	// Both guards end: a continuation still held in either would be
	// ended now (charged again, or given back).
	a.Close()
	b.Close()
	st, err := store.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 3 || st.Balance.SpentUSD != "0.25" || st.Balance.ReservedUSD != "0" || st.Balance.Calls != 1 ||
		len(st.History) != 1 || st.History[0].Outcome != preflight.OutcomeSuccess {
		t.Fatalf("%d runs, balance %+v, history %+v; want 3 runs, 0.25 spent, nothing held, one call, one successful entry", runs, st.Balance, st.History)
	}
	if len(claims.parked) != 0 {
		t.Fatalf("%d continuations still parked, want none", len(claims.parked))
	}
}
