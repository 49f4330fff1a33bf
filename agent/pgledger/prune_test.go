package pgledger

import (
	"context"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
)

// age makes every timestamp of scope d older, as if its calls had ended
// that long ago.
func age(t *testing.T, db *pgxpool.Pool, scope string, d time.Duration) {
	t.Helper()
	for _, table := range []string{"preflight_ended", "preflight_entries"} {
		if _, err := db.Exec(context.Background(), "UPDATE "+table+" SET at = at - $2 * interval '1 millisecond' WHERE scope = $1", scope, d.Milliseconds()); err != nil {
			t.Fatal(err)
		}
	}
}

func rowsOf(t *testing.T, db *pgxpool.Pool, scope string) int {
	t.Helper()
	n := 0
	for _, table := range []string{"preflight_scopes", "preflight_holds", "preflight_ended", "preflight_entries"} {
		var k int
		if err := db.QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE scope = $1", scope).Scan(&k); err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}

// TestPruneIdle deletes the scopes idle for longer than asked, and only
// those: not one used recently, not one holding money, not one a worker
// has locked at that moment.
func TestPruneIdle(t *testing.T) {
	p := startPostgres(t)
	db := p.pool(t)
	ctx := context.Background()
	spend := func(scope, id string) *Store {
		s := newStore(t, p, scope, nil)
		if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: "0.5", LimitUSD: "10", Started: true}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		e := agent.Entry{ToolCallID: id, Fingerprint: "fp-" + id, Outcome: preflight.OutcomeSuccess, GoalHash: "g"}
		if _, err := s.Settle(ctx, id, "0.25", &e); err != nil {
			t.Fatal(err)
		}
		return s
	}
	spend("old", "a")
	age(t, db, "old", 2*time.Hour)
	spend("recent", "b")
	holding := spend("holding", "c")
	if ok, _, err := holding.Reserve(ctx, agent.Reservation{ID: "d", AmountUSD: "0.5", LimitUSD: "10", Lease: time.Hour, Started: true}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	age(t, db, "holding", 2*time.Hour)
	spend("locked", "e")
	age(t, db, "locked", 2*time.Hour)

	// A worker's operation holds the row of "locked" while PruneIdle runs.
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM preflight_scopes WHERE scope = 'locked' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	pruned, err := PruneIdle(ctx, db, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"old"}, pruned); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rowsOf(t, db, "old"); n != 0 {
		t.Errorf("%d rows of the pruned scope left", n)
	}
	for _, scope := range []string{"recent", "holding", "locked"} {
		if rowsOf(t, db, scope) == 0 {
			t.Errorf("scope %s was deleted", scope)
		}
	}
	// Once unlocked, it is pruned. The stores opened above may still be
	// at a background operation of theirs, which locks the row a moment
	// (PruneIdle skips a row in use), so it is tried again for a while.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pruned, err := PruneIdle(ctx, db, time.Hour)
		if err == nil && len(pruned) == 0 && time.Now().Before(deadline) {
			continue
		}
		if err != nil || !cmp.Equal(pruned, []string{"locked"}) {
			t.Errorf("once unlocked: pruned %v, %v; want [locked]", pruned, err)
		}
		break
	}
	st, err := newStore(t, p, "old", nil).State(ctx)
	if err != nil || st.Balance.SpentUSD != "0" || len(st.History) != 0 {
		t.Errorf("a pruned scope used again: %+v, %d entries, %v; want it new", st.Balance, len(st.History), err)
	}
	st, err = holding.State(ctx)
	if err != nil || st.Balance.SpentUSD != "0.25" || st.Balance.ReservedUSD != "0.5" {
		t.Errorf("the scope holding money: %+v, %v", st.Balance, err)
	}
	if _, err := PruneIdle(ctx, db, time.Second); err == nil {
		t.Error("PruneIdle with an idle of 1 s accepted")
	}
}
