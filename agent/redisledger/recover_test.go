package redisledger

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
)

// TestRecover loses each part of a scope in turn, reconciles it with
// Recover and spends again: the spending is the operator's figure, holds
// are gone, the surviving history is kept, a worker that used the scope
// before fails closed without marking it lost again, and one opened
// after works.
func TestRecover(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	for i, name := range []string{"scope hash"} { // a scope is one key
		t.Run(name, func(t *testing.T) {
			scope := "recover-" + strconv.Itoa(i)
			old := newStore(t, p, scope, nil)
			if ok, _, err := old.Reserve(ctx, agent.Reservation{ID: "a", AmountUSD: "0.4", LimitUSD: "1", Started: true}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			e := agent.Entry{ToolCallID: "a", Fingerprint: "fp-a", Outcome: preflight.OutcomeSuccess, ResultReference: "r", GoalHash: "g"}
			if _, err := old.Settle(ctx, "a", "0.4", &e); err != nil {
				t.Fatal(err)
			}
			if ok, _, err := old.Reserve(ctx, agent.Reservation{ID: "running", AmountUSD: "0.3", LimitUSD: "1", Started: true}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			if err := p.client(t).Del(ctx, old.Keys()[i]).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := old.StateOf(ctx, ""); !errors.Is(err, agent.ErrStoreStateLost) {
				t.Fatalf("after the %s was deleted: %v; want agent.ErrStoreStateLost", name, err)
			}
			old.Close() // the operator stops the workers

			op := newStore(t, p, scope, nil)
			// The operator's books: a's 0.4 and the running call's 0.3.
			if err := op.Recover(ctx, "0.7"); err != nil {
				t.Fatal(err)
			}
			st, err := op.State(ctx)
			if err != nil {
				t.Fatalf("State after Recover: %v", err)
			}
			if st.Balance.SpentUSD != "0.7" || st.Balance.ReservedUSD != "0" {
				t.Errorf("after Recover: spent %s, reserved %s; want 0.7 and 0", st.Balance.SpentUSD, st.Balance.ReservedUSD)
			}
			var fps []string
			for _, h := range st.History {
				fps = append(fps, h.Fingerprint)
			}
			want := []string{"fp-a"}
			if i == 0 {
				want = nil // the history was in the lost hash
			}
			if diff := cmp.Diff(want, fps); diff != "" {
				t.Errorf("history after Recover (-want +got):\n%s", diff)
			}
			fresh := newStore(t, p, scope, nil)
			if ok, bal, err := fresh.Reserve(ctx, agent.Reservation{ID: "b", AmountUSD: "0.3", LimitUSD: "1", Started: true}); !ok || err != nil {
				t.Fatalf("Reserve after Recover: %v, %+v, %v", ok, bal, err)
			}
			if ok, _, err := fresh.Reserve(ctx, agent.Reservation{ID: "c", AmountUSD: "0.01", LimitUSD: "1", Started: true}); ok || err != nil {
				t.Errorf("Reserve past the recovered budget: %v, %v; want refused", ok, err)
			}
			if _, err := fresh.Settle(ctx, "b", "0.25", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := old.StateOf(ctx, ""); !errors.Is(err, agent.ErrStoreStateLost) || !strings.Contains(err.Error(), "recovered") {
				t.Errorf("a worker from before Recover: %v; want agent.ErrStoreStateLost (recovered)", err)
			}
			// That worker's refusal did not mark the scope lost again.
			st, err = fresh.State(ctx)
			if err != nil || st.Balance.SpentUSD != "0.95" {
				t.Errorf("State: %+v, %v; want spent 0.95", st.Balance, err)
			}
		})
	}
	t.Run("not lost", func(t *testing.T) {
		s := newStore(t, p, "recover-healthy", nil)
		if _, err := s.State(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Recover(ctx, "0"); err == nil || !strings.Contains(err.Error(), "not marked lost") {
			t.Errorf("Recover of a healthy scope: %v; want refused", err)
		}
	})
	t.Run("bad amount", func(t *testing.T) {
		s := newStore(t, p, "recover-bad", nil)
		for _, amount := range []string{"", "-1", "abc", "0.0000000000000000001"} {
			if err := s.Recover(ctx, json.Number(amount)); err == nil {
				t.Errorf("Recover(%q) succeeded", amount)
			}
		}
	})
}
