package agenttest

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// Arrivals is an in-memory agent.LedgerStore that counts the calls
// decided on it (each decision of a guard asks the store for one
// reservation, ReserveOf, whether the call then runs, waits on an
// identical one or is withheld), so that a tool can wait until all the
// parallel calls of a turn were decided: a test of parallel duplicates
// then shows that the framework ran them at once and that they waited on
// one execution, not that they merely followed one another. Give it to
// the guard under test as its LedgerStore. Safe for concurrent use.
type Arrivals struct {
	agent.LedgerStore

	mu      sync.Mutex
	decided int
	changed chan struct{} // closed and replaced at each decision
}

// NewArrivals returns a store on which nothing was decided.
func NewArrivals() *Arrivals {
	return &Arrivals{LedgerStore: agent.NewMemoryLedgerStore(nil), changed: make(chan struct{})}
}

// ReserveOf counts a decision and reserves as the in-memory store does.
func (a *Arrivals) ReserveOf(ctx context.Context, r agent.Reservation, fingerprint string) (bool, agent.LedgerState, error) {
	ok, st, err := a.LedgerStore.ReserveOf(ctx, r, fingerprint)
	a.mu.Lock()
	a.decided++
	a.mu.Unlock()
	a.changes()
	return ok, st, err
}

// Settle settles as the in-memory store does.
func (a *Arrivals) Settle(ctx context.Context, id string, costUSD json.Number, record *agent.Entry) (agent.Settlement, error) {
	defer a.changes()
	return a.LedgerStore.Settle(ctx, id, costUSD, record)
}

// Cancel withdraws as the in-memory store does.
func (a *Arrivals) Cancel(ctx context.Context, id string) error {
	defer a.changes()
	return a.LedgerStore.Cancel(ctx, id)
}

// Release releases as the in-memory store does.
func (a *Arrivals) Release(ctx context.Context, id string) error {
	defer a.changes()
	return a.LedgerStore.Release(ctx, id)
}

// changes wakes the waiters.
func (a *Arrivals) changes() {
	a.mu.Lock()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// Idle blocks until no call holds money on the store (every call that
// ran was settled or released), and reports whether that happened within
// d: for frameworks that return from a cancelled run before its tools
// did.
func (a *Arrivals) Idle(d time.Duration) bool {
	timeout := time.After(d)
	for {
		a.mu.Lock()
		changed := a.changed
		a.mu.Unlock()
		st, err := a.StateOf(context.Background(), "")
		if err == nil && st.Balance.ReservedUSD == "0" {
			return true
		}
		select {
		case <-changed:
		case <-timeout:
			return false
		}
	}
}

// Wait blocks until n calls in all were decided on the store, and
// reports whether they were within d.
func (a *Arrivals) Wait(n int, d time.Duration) bool {
	timeout := time.After(d)
	for {
		a.mu.Lock()
		got, changed := a.decided, a.changed
		a.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-changed:
		case <-timeout:
			return false
		}
	}
}

// Balance returns the store's balance: spent, held by calls in flight,
// calls begun.
func (a *Arrivals) Balance(t T) agent.Balance {
	t.Helper()
	st, err := a.StateOf(context.Background(), "")
	if err != nil {
		t.Fatalf("the store cannot be read: %v", err)
	}
	return st.Balance
}

// CancelledOnce checks what a search cancelled while it ran leaves on
// the store, once no call holds money: the scenario sc ran the search
// once, g's history holds that call as one transient failure, the
// search's estimate is spent and nothing is held. What every adapter's
// cancellation test asserts after the run.
func (a *Arrivals) CancelledOnce(t T, sc *Scenario, g *agent.Guard) {
	t.Helper()
	if !a.Idle(10 * time.Second) {
		t.Fatalf("the cancelled call still holds its reservation: %+v", a.Balance(t))
	}
	h, err := g.Ledger().History(context.Background())
	if err != nil {
		t.Fatalf("the history cannot be read: %v", err)
	}
	bal := a.Balance(t)
	if n := sc.Counts()[Search]; n != 1 || len(h) != 1 || h[0].Outcome != preflight.OutcomeTransientFailure ||
		bal.SpentUSD != SearchPrice || bal.ReservedUSD != "0" {
		t.Fatalf("searches %d, history %+v, balance %+v; want 1 search, one transient failure, %s spent, nothing held", n, h, bal, SearchPrice)
	}
}

// Expiring returns a context whose deadline passes when expire is
// called, at a moment the test chooses (while a tool runs, say), instead
// of after a time a loaded machine may overrun: its Err is then
// context.DeadlineExceeded, as a deadline's. Contexts derived from it
// (context.WithCancel, WithValue and the like, as a framework derives one
// per call) end before expire returns, as those of a real deadline do,
// never a moment later; their Err is context.Canceled and their
// context.Cause context.DeadlineExceeded (only a timer of the context
// package can end them with DeadlineExceeded itself).
func Expiring(parent context.Context) (ctx context.Context, expire func()) {
	inner, cancel := context.WithCancelCause(parent)
	e := &expiring{Context: inner}
	return e, func() { cancel(context.DeadlineExceeded) }
}

// expiring is a cancelable context of the context package (so that the
// contexts derived from it are ended with it, not by a goroutine watching
// it) whose Err says its deadline passed.
type expiring struct{ context.Context }

func (e *expiring) Err() error {
	if e.Context.Err() != nil {
		return context.DeadlineExceeded
	}
	return nil
}
