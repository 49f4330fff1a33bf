package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMemoryLedgerStoreMoney(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryLedgerStore(nil)
	reserve := func(id, amount string, want bool) {
		t.Helper()
		ok, _, err := s.Reserve(ctx, Reservation{ID: id, AmountUSD: jsonNumber(amount), LimitUSD: "1", MaxCalls: 4})
		if err != nil || ok != want {
			t.Fatalf("Reserve(%s, %s) = %v, %v; want %v", id, amount, ok, err, want)
		}
	}
	reserve("a", "0.6", true)
	reserve("b", "0.5", false) // 0.6 + 0.5 > 1
	reserve("b", "0.4", true)
	if ok, b, err := s.Reserve(ctx, Reservation{ID: "a", AmountUSD: "0"}); !ok || err != nil || b.ReservedUSD != "1" || b.Calls != 2 {
		t.Errorf("a retried reservation: %v, %+v, %v; want held once", ok, b, err)
	}
	set, err := s.Settle(ctx, "a", "0.25", nil)
	if err != nil || set.Late || set.Duplicate {
		t.Fatalf("Settle(a) = %+v, %v", set, err)
	}
	if set, _ := s.Settle(ctx, "a", "0.25", nil); !set.Duplicate {
		t.Errorf("second Settle(a) = %+v, want Duplicate", set)
	}
	if err := s.Release(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	// A settlement of a reservation the store no longer holds still counts.
	if set, _ := s.Settle(ctx, "lost", "0.125", nil); !set.Late {
		t.Errorf("Settle(lost) = %+v, want Late", set)
	}
	reserve("c", "0", true) // a free call fits whatever was spent
	reserve("d", "0.01", true)
	reserve("e", "0", false) // the fifth call exceeds MaxCalls 4
	st, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Balance{SpentUSD: "0.375", ReservedUSD: "0.01", Calls: 4}
	if diff := cmp.Diff(want, st.Balance); diff != "" {
		t.Errorf("balance (-want +got):\n%s", diff)
	}
}

func jsonNumber(s string) json.Number { return json.Number(s) }

// downStore is a LedgerStore whose backend is unreachable. (The Redis
// store's tests take a real redis-server down; this one checks the Guard's
// side alone.)
type downStore struct{ LedgerStore }

func (downStore) ReserveOf(context.Context, Reservation, string) (bool, LedgerState, error) {
	return false, LedgerState{}, errors.New("connection refused")
}

func TestGuardReportsMoneyAndFailsClosed(t *testing.T) {
	ctx := context.Background()
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := g.Call(ctx, searchReq("a", "0.3"), func(context.Context) (Completion, error) {
		return Completion{CostUSD: "0.125"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Report{ReservedUSD: "0.3", SettledUSD: "0.125", Balance: &Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 0}}
	got := Report{ReservedUSD: rep.ReservedUSD, SettledUSD: rep.SettledUSD, Balance: rep.Balance}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}

	down, _ := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: downStore{NewMemoryLedgerStore(nil)}})
	ran := false
	rep, err = down.Call(ctx, searchReq("b", "0.3"), func(context.Context) (Completion, error) {
		ran = true
		return Completion{}, nil
	})
	if ran || rep.Called || !errors.Is(err, ErrStoreUnavailable) || !strings.Contains(err.Error(), "call not made") {
		t.Errorf("with the store down: ran %v, report %+v, error %v; want not run and ErrStoreUnavailable", ran, rep, err)
	}
}

// stuckStore is a store whose State waits until released: a store across
// the network that stopped answering. (The Redis store is tested against a
// real stalled redis-server in its own module.)
type stuckStore struct {
	LedgerStore
	entered chan struct{}
	release chan struct{}
}

func (s stuckStore) ReserveOf(ctx context.Context, r Reservation, fp string) (bool, LedgerState, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.LedgerStore.ReserveOf(ctx, r, fp)
}

// stuckCall returns a Guard on a stuckStore (budget 1) whose first call,
// started here, is stuck in its reservation; first gets its error once
// st.release lets it on. The call's reservation has begun when stuckCall
// returns.
func stuckCall(t *testing.T) (g *Guard, st stuckStore, first chan error) {
	t.Helper()
	st = stuckStore{NewMemoryLedgerStore(nil), make(chan struct{}, 1), make(chan struct{})}
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	first = make(chan error, 1)
	go func() {
		_, err := g.Call(context.Background(), searchReq("a", "0.1"), func(context.Context) (Completion, error) { return Completion{}, nil })
		first <- err
	}()
	<-st.entered
	return g, st, first
}

// silentStore never answers a read or a reservation: it waits until the
// context it was given ends.
type silentStore struct{ LedgerStore }

func (silentStore) ReserveOf(ctx context.Context, _ Reservation, _ string) (bool, LedgerState, error) {
	<-ctx.Done()
	return false, LedgerState{}, ctx.Err()
}

// TestGuardStoreTimeout: with no deadline of the caller's, a store that
// never answers fails the call closed after GuardOptions.StoreTimeout.
func TestGuardStoreTimeout(t *testing.T) {
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: silentStore{NewMemoryLedgerStore(nil)}, StoreTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ran := false
	go func() {
		_, err := g.Call(context.Background(), searchReq("a", "0.1"), func(context.Context) (Completion, error) { ran = true; return Completion{}, nil })
		done <- err
	}()
	select {
	case err := <-done:
		if ran || !errors.Is(err, ErrStoreUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("with a silent store: ran %v, error %v; want not run, ErrStoreUnavailable and context.DeadlineExceeded", ran, err)
		}
	case <-time.After(10 * time.Second): // not a timing claim: without the timeout it waits for ever
		t.Fatal("a call on a silent store with StoreTimeout 50 ms still waits after 10 s")
	}
}

// TestMemoryLedgerStoreRetries: a repeated Reserve of a held id holds
// nothing more; a Reserve of an ended id is refused; a repeated Settle
// reports the first settlement.
func TestMemoryLedgerStoreRetries(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryLedgerStore(nil)
	for range 2 {
		if ok, b, err := s.Reserve(ctx, Reservation{ID: "a", AmountUSD: "0.5", LimitUSD: "1"}); !ok || err != nil || b.ReservedUSD != "0.5" || b.Calls != 1 {
			t.Fatalf("Reserve(a) = %v, %+v, %v; want held once", ok, b, err)
		}
	}
	first, err := s.Settle(ctx, "a", "0.25", nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Settle(ctx, "a", "0.40", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Settlement{Duplicate: true, CostUSD: "0.25", Balance: Balance{SpentUSD: "0.25", ReservedUSD: "0", Calls: 1}}
	if diff := cmp.Diff(want, again); diff != "" || first.Duplicate {
		t.Errorf("repeated Settle (-want +got):\n%s (first %+v)", diff, first)
	}
	if _, _, err := s.Reserve(ctx, Reservation{ID: "a", AmountUSD: "0.5"}); !errors.Is(err, ErrReservationEnded) {
		t.Errorf("Reserve of a settled id: %v, want ErrReservationEnded", err)
	}
}

// TestGuardDeadlineBehindStuckCall: a call waiting for the Guard's
// decide-and-reserve step behind an identical call (same fingerprint)
// stuck on the store returns when its own context ends, without running.
// (A call with another fingerprint does not wait for it: see
// TestGuardReservesOverlap.)
func TestGuardDeadlineBehindStuckCall(t *testing.T) {
	g, st, first := stuckCall(t) // the first call is stuck on the store
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	second := make(chan error, 1)
	ran := false
	go func() {
		_, err := g.Call(ctx, searchReq("a", "0.1"), func(context.Context) (Completion, error) { ran = true; return Completion{}, nil })
		second <- err
	}()
	select {
	case err := <-second:
		if ran || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("behind a stuck call: ran %v, error %v; want not run and context.DeadlineExceeded", ran, err)
		}
	case <-time.After(10 * time.Second): // not a timing claim: it would wait for ever
		t.Error("a call with a 50 ms deadline still waits behind a stuck call after 10 s")
	}
	close(st.release)
	if err := <-first; err != nil {
		t.Errorf("the first call: %v", err)
	}
}
