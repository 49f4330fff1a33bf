package agent

import (
	"context"
	"errors"
	"testing"
)

// lossStore holds the reservation of fingerprint slow until released, and
// answers every other reservation with ErrStoreStateLost: a store whose
// state vanished while one call's reservation was on its way.
type lossStore struct {
	LedgerStore
	slow     string
	reserved chan struct{} // closed when slow's reservation is held
	release  chan struct{}
	canceled chan string // withdrawn reservations
}

func (s *lossStore) ReserveOf(ctx context.Context, r Reservation, fp string) (bool, LedgerState, error) {
	if fp != s.slow {
		return false, LedgerState{}, ErrStoreStateLost
	}
	ok, st, err := s.LedgerStore.ReserveOf(ctx, r, fp)
	close(s.reserved)
	<-s.release
	return ok, st, err
}

func (s *lossStore) Cancel(ctx context.Context, id string) error {
	s.canceled <- id
	return s.LedgerStore.Cancel(ctx, id)
}

// TestGuardNoRunAfterStateLost: a call whose reservation was under way
// when another call of the same Guard was told the store's state was lost
// does not run, and its hold is withdrawn; a call that starts afterwards
// goes to the store, which decides.
func TestGuardNoRunAfterStateLost(t *testing.T) {
	slow, other := searchReq("slow", "0.1"), searchReq("other", "0.1")
	g0, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1"})
	if err != nil {
		t.Fatal(err)
	}
	pre, _, err := g0.Begin(context.Background(), slow)
	if err != nil || pre == nil {
		t.Fatal(pre, err)
	}
	fp := pre.rep.Decision.RequestFingerprint
	pre.Release()

	st := &lossStore{LedgerStore: NewMemoryLedgerStore(nil), slow: fp, reserved: make(chan struct{}), release: make(chan struct{}), canceled: make(chan string, 1)}
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		p   *Permit
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, _, err := g.Begin(context.Background(), slow)
		done <- result{p, err}
	}()
	<-st.reserved
	if _, _, err := g.Begin(context.Background(), other); !errors.Is(err, ErrStoreStateLost) {
		t.Fatalf("the other call: %v; want ErrStoreStateLost", err)
	}
	close(st.release)
	r := <-done
	if r.p != nil || !errors.Is(r.err, ErrStoreStateLost) || !errors.Is(r.err, ErrStoreUnavailable) {
		t.Fatalf("the call reserving during the loss: permit %v, %v; want no permit and ErrStoreStateLost", r.p != nil, r.err)
	}
	select {
	case <-st.canceled:
	default:
		t.Error("its hold was not withdrawn")
	}
	s, err := st.LedgerStore.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Balance; b.ReservedUSD != "" && b.ReservedUSD != "0" {
		t.Errorf("held after the loss: %s USD; want nothing", b.ReservedUSD)
	}
	// Later calls are the store's to judge: here it still refuses them.
	if _, _, err := g.Begin(context.Background(), other); !errors.Is(err, ErrStoreStateLost) {
		t.Errorf("a later call: %v; want the store's ErrStoreStateLost", err)
	}
}
