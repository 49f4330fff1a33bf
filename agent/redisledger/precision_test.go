package redisledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
)

// TestGuardPrecision runs calls whose estimate or reported cost has more
// fraction digits than the Redis ledger counts through a Guard on Redis
// and on the in-memory store: both run the call and count it, Redis
// rounded up to the next attodollar, memory exactly. A budget Redis cannot
// represent is refused when the Guard is built, not reported on every
// call as an unavailable store.
func TestGuardPrecision(t *testing.T) {
	p := startRedis(t)
	c := p.client(t)
	type outcome struct {
		Called             bool
		Reserved, Settled  json.Number
		SpentRedis, Memory json.Number // what each store counted
	}
	for _, tt := range []struct {
		name, estimate, cost string
		want                 outcome
	}{
		{"estimate with 19 fraction digits", "0.1000000000000000001", "", outcome{true, "0.1000000000000000001", "0.1000000000000000001", "0.100000000000000001", "0.1000000000000000001"}},
		{"cost with 19 fraction digits", "0.1", "0.0500000000000000001", outcome{true, "0.1", "0.0500000000000000001", "0.050000000000000001", "0.0500000000000000001"}},
		{"cost with 40 fraction digits", "0.1", "0.0000000000000000000000000000000000000001", outcome{true, "0.1", "0.0000000000000000000000000000000000000001", "0.000000000000000001", "0.0000000000000000000000000000000000000001"}},
		{"18 fraction digits", "0.100000000000000001", "0.050000000000000001", outcome{true, "0.100000000000000001", "0.050000000000000001", "0.050000000000000001", "0.050000000000000001"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got outcome
			for i, store := range []agent.LedgerStore{newStore(t, p, "precision-"+tt.name, nil), agent.NewMemoryLedgerStore(nil)} {
				g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: store, BudgetUSD: "1"})
				if err != nil {
					t.Fatal(err)
				}
				rep, err := g.Call(context.Background(), searchRequest("q", tt.estimate, false), func(context.Context) (agent.Completion, error) {
					return agent.Completion{CostUSD: json.Number(tt.cost)}, nil
				})
				if err != nil {
					t.Errorf("store %d: Call: %v (store unavailable: %v)", i, err, errors.Is(err, agent.ErrStoreUnavailable))
				}
				spent, err := g.SpentUSD(context.Background())
				if err != nil {
					t.Fatalf("store %d: SpentUSD: %v", i, err)
				}
				if i == 0 {
					got = outcome{Called: rep.Called, Reserved: rep.ReservedUSD, Settled: rep.SettledUSD, SpentRedis: spent}
				} else {
					got.Memory = spent
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	s, err := New(c, "precision-budget", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, budget := range []json.Number{"1.0000000000000000001", "1e-19"} {
		_, err = agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: budget})
		if !errors.Is(err, ErrPrecision) || !strings.Contains(err.Error(), "BudgetUSD") || !strings.Contains(err.Error(), "at most 18") {
			t.Errorf("NewGuard with BudgetUSD %s on Redis: %v; want an error naming BudgetUSD and saying at most 18 fraction digits", budget, err)
		}
	}
	if ok, _, err := s.Reserve(context.Background(), agent.Reservation{ID: "x", AmountUSD: "0.1", LimitUSD: "1.0000000000000000001"}); ok || !errors.Is(err, ErrPrecision) {
		t.Errorf("Reserve with a 19-digit limit = %v, %v; want ErrPrecision", ok, err)
	}
	for _, budget := range []json.Number{"1.000000000000000001", "1e-18", "25"} {
		if _, err = agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: budget}); err != nil {
			t.Errorf("NewGuard with BudgetUSD %s on Redis: %v", budget, err)
		}
	}
}
