package redisledger

import (
	"context"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
)

// TestIdleTTL: a scope's keys expire IdleTTL after its last write, and a
// lease renewal is a write: while a call is in flight, longer than
// IdleTTL, another process still sees its hold, and then its cost; once
// nothing is in flight and nothing is written, the scope expires.
func TestIdleTTL(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	const idle = 600 * time.Millisecond
	for _, tt := range []struct {
		name  string
		lease time.Duration
	}{
		{"lease shorter than IdleTTL", 300 * time.Millisecond},
		{"lease longer than IdleTTL", 3 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scope := "idle-" + tt.name
			a := newStore(t, p, scope, &Options{IdleTTL: idle, Lease: tt.lease})
			b := newStore(t, p, scope, &Options{IdleTTL: idle, Lease: tt.lease}) // another worker
			if ok, _, err := a.Reserve(ctx, agent.Reservation{ID: "long", AmountUSD: "0.6", LimitUSD: "1"}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			time.Sleep(5 * idle / 2) // the call runs
			st, err := b.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0.6", Calls: 1}, st.Balance); diff != "" {
				t.Errorf("during a call longer than IdleTTL, the other worker sees (-want +got):\n%s", diff)
			}
			if _, err := a.Settle(ctx, "long", "0.6", nil); err != nil {
				t.Fatal(err)
			}
			st, _ = b.State(ctx)
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0.6", ReservedUSD: "0", Calls: 1}, st.Balance); diff != "" {
				t.Errorf("after the call (-want +got):\n%s", diff)
			}
			time.Sleep(2 * idle) // nothing in flight, nothing written
			st, _ = b.State(ctx)
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 0}, st.Balance); diff != "" {
				t.Errorf("after IdleTTL with nothing written, the scope is still there (-want +got):\n%s", diff)
			}
		})
	}
}
