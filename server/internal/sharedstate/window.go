package sharedstate

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/pgledger"
	"github.com/agentpreflight/preflight/agent/redisledger"
)

// Window is a principal's budget over a window of time in the store, which
// every replica's runs of the principal spend together: the windows are
// the multiples of the window's length since the Unix epoch, each a ledger
// of its own in the store (so that replicas agree on them without talking),
// and a reservation is settled or withdrawn in the window it was made in,
// even after that window has passed.
type Window struct {
	s         *Store
	principal string
	length    time.Duration
	limit     json.Number

	mu    sync.Mutex
	open  map[int64]ledger // by window number
	holds map[string]int64 // reservation id → its window number
}

// ledger is a window's LedgerStore, closed when done with.
type ledger interface {
	agent.LedgerStore
	Close() error
}

// Window returns principal's budget of limitUSD per length in the store.
func (s *Store) Window(principal string, length time.Duration, limitUSD json.Number) *Window {
	return &Window{s: s, principal: principal, length: length, limit: limitUSD, open: map[int64]ledger{}, holds: map[string]int64{}}
}

// of returns the ledger of window k, opened on first use; the windows
// before k-1 that hold nothing are closed. w.mu is held.
func (w *Window) of(k int64) (ledger, error) {
	if l := w.open[k]; l != nil {
		return l, nil
	}
	name := ScopeName(w.principal, "window:"+w.length.String()+":"+strconv.FormatInt(k, 10))
	var l ledger
	var err error
	if w.s.rdb != nil {
		l, err = redisledger.New(w.s.rdb, name, &redisledger.Options{AllowUnsafeServer: true})
	} else {
		l, err = pgledger.New(context.Background(), w.s.pool, name, &pgledger.Options{AllowUnsafeServer: true})
	}
	if err != nil {
		return nil, err
	}
	w.open[k] = l
	for old, ol := range w.open {
		if old >= k-1 {
			continue
		}
		used := false
		for _, hk := range w.holds {
			used = used || hk == old
		}
		if !used {
			ol.Close()
			delete(w.open, old)
		}
	}
	return l, nil
}

// Reserve holds amountUSD for reservation id in the current window if it
// fits the window's budget, with every replica's holds and spending.
func (w *Window) Reserve(ctx context.Context, id string, amountUSD json.Number) (bool, error) {
	w.mu.Lock()
	k := time.Now().UnixNano() / int64(w.length)
	l, err := w.of(k)
	w.mu.Unlock()
	if err != nil {
		return false, err
	}
	ok, _, err := l.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: amountUSD, LimitUSD: w.limit, Started: true})
	if err != nil || !ok {
		return false, err
	}
	w.mu.Lock()
	w.holds[id] = k
	w.mu.Unlock()
	return true, nil
}

// take returns the ledger reservation id was made in, and forgets it.
func (w *Window) take(id string) ledger {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.holds[id]
	if !ok {
		return nil
	}
	delete(w.holds, id)
	return w.open[k]
}

// Settle counts costUSD as spent in reservation id's window.
func (w *Window) Settle(ctx context.Context, id string, costUSD json.Number) error {
	if l := w.take(id); l != nil {
		_, err := l.Settle(ctx, id, costUSD, nil)
		return err
	}
	return nil
}

// Cancel withdraws reservation id, made before a decision not to run.
func (w *Window) Cancel(ctx context.Context, id string) error {
	if l := w.take(id); l != nil {
		return l.Cancel(ctx, id)
	}
	return nil
}

// Release frees reservation id: its call did not run.
func (w *Window) Release(ctx context.Context, id string) error {
	if l := w.take(id); l != nil {
		return l.Release(ctx, id)
	}
	return nil
}
