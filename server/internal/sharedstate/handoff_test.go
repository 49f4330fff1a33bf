package sharedstate

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// TestHandoffLease: a call one replica allowed and another resumed
// (agent.Guard.Resume, as for a multi-round trip's retry) keeps its
// reservation's lease renewed by the replica that resumed it, after the
// first let go: settled in time, not charged by an expired lease. A call
// the first let go and nobody resumed is charged when its lease runs out.
func TestHandoffLease(t *testing.T) {
	const lease = time.Second
	for _, kind := range []string{"redis", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, kind)
			var guards []*agent.Guard
			var ledger agent.LedgerStore
			for range 2 { // two replicas: a ledger store and a lease keeper each
				sc, err := s.Scope("alice", "run:lease")
				if err != nil {
					t.Fatal(err)
				}
				defer sc.Close()
				g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: sc.Ledger, BudgetUSD: "1", Lease: lease})
				if err != nil {
					t.Fatal(err)
				}
				guards, ledger = append(guards, g), sc.Ledger
			}
			begin := func(query string) *agent.Permit {
				t.Helper()
				p, rep, err := guards[0].Begin(ctx, preflight.ToolCallRequest{RunID: "run-1", StepID: query,
					Tool: preflight.ToolCall{Provider: "search", Operation: "web_search",
						Request: json.RawMessage(`{"query":"` + query + `"}`), EstimatedExternalCostUSD: "0.1"}})
				if err != nil || p == nil {
					t.Fatalf("not allowed: %v %+v", err, rep.Decision)
				}
				return p
			}
			p := begin("resumed")
			q, err := guards[1].Resume(p.Handoff())
			if err != nil {
				t.Fatal(err)
			}
			p.Forget()
			begin("dropped").Forget() // nobody renews it
			time.Sleep(4 * lease)
			st, err := ledger.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Balance.ReservedUSD != "0.1" || st.Balance.SpentUSD != "0.1" {
				t.Fatalf("after %v: %+v; want the resumed call held (0.1) and the dropped one charged (0.1)", 4*lease, st.Balance)
			}
			rep, err := q.End(agent.Completion{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.LateSettlement || rep.SettledUSD != "0.1" || !rep.Recorded {
				t.Fatalf("the resumed call's settlement: late %v, settled %s, recorded %v; want in time, 0.1, recorded",
					rep.LateSettlement, rep.SettledUSD, rep.Recorded)
			}
			if st, err = ledger.State(ctx); err != nil || st.Balance.SpentUSD != "0.2" || st.Balance.ReservedUSD != "0" || st.Balance.Calls != 2 {
				t.Fatalf("%+v %v; want 0.2 spent, nothing held, 2 calls", st.Balance, err)
			}
		})
	}
}
