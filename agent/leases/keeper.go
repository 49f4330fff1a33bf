// Package leases keeps a process's reservation leases alive in a shared
// agent.LedgerStore: the renewal loop that every such store needs and
// that must behave the same in each.
//
// A store that lends money to a call under a lease (the hold lapses, or is
// charged, when its lease runs out) must renew the leases of the calls its
// process still runs, and stop when the process dies. A [Keeper] does
// this: the store tells it which reservations it holds ([Keeper.Hold],
// [Keeper.Drop]) and how to renew them (a [RenewFunc]); the Keeper calls
// it every third of the shortest lease held, and soon again after a
// failure, so that a hold lapses only when no renewal has reached the
// store for a whole lease.
package leases

import (
	"context"
	"sync"
	"time"
)

// RenewFunc extends to lease, from now, the leases of ids, which the
// process holds, in the store. ctx ends when the renewal is due again; an
// error makes the Keeper try again after Options.Retry.
type RenewFunc func(ctx context.Context, lease time.Duration, ids []string) error

// Options configures a [Keeper]. The zero value works.
type Options struct {
	// Lease is the longest interval between renewals while anything is
	// held: a third of it, or of the shortest lease held if shorter.
	// Zero means 15 s.
	Lease time.Duration
	// MaxInterval, when positive, caps the interval between renewals
	// further (a store whose keys expire when idle renews them at least
	// this often). It never shortens the time one renewal may take.
	MaxInterval time.Duration
	// Retry is how soon a renewal that failed is tried again. Zero means
	// 100 ms.
	Retry time.Duration
}

// Keeper renews the leases of the reservations a process holds until
// they are dropped or the Keeper is closed. It is safe for concurrent
// use. Its loop starts with the first Hold.
type Keeper struct {
	renew RenewFunc
	lease time.Duration
	max   time.Duration
	retry time.Duration

	mu      sync.Mutex
	held    map[string]time.Duration
	running bool
	stop    chan struct{}
}

// New returns a Keeper that renews with renew.
func New(renew RenewFunc, opts Options) *Keeper {
	if opts.Lease <= 0 {
		opts.Lease = 15 * time.Second
	}
	if opts.Retry <= 0 {
		opts.Retry = 100 * time.Millisecond
	}
	return &Keeper{renew: renew, lease: opts.Lease, max: opts.MaxInterval, retry: opts.Retry, held: make(map[string]time.Duration), stop: make(chan struct{})}
}

// Hold notes that the process holds reservation id under lease, so that
// the next renewals cover it. A store calls it before it asks for the
// hold, so that the hold is covered from the moment it exists.
func (k *Keeper) Hold(id string, lease time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.held[id] = lease
	if !k.running {
		k.running = true
		go k.loop()
	}
}

// Drop stops renewing reservation id: it ended, or the process gave it
// up and lets its lease run out.
func (k *Keeper) Drop(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.held, id)
}

// Holds reports whether reservation id is being renewed.
func (k *Keeper) Holds(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.held[id]
	return ok
}

// Close stops every renewal; the leases still held then run out. A
// renewal under way is let finish. Close is idempotent.
func (k *Keeper) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
}

// loop renews, every third of the shortest lease held (and at most every
// MaxInterval), the leases held, one call of renew per lease length, each
// given a third of the shortest lease: the time before the next renewal
// is due. After a failure it tries again after Retry, not a third later,
// so that a renewal reaches the store soon after an interruption ends.
func (k *Keeper) loop() {
	for {
		k.mu.Lock()
		shortest := k.lease
		byLease := make(map[time.Duration][]string)
		for id, l := range k.held {
			shortest = min(shortest, l)
			byLease[l] = append(byLease[l], id)
		}
		k.mu.Unlock()
		try := max(shortest/3, time.Millisecond)
		wait := try
		if k.max > 0 {
			wait = min(wait, k.max)
		}
		for l, ids := range byLease {
			select {
			case <-k.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), try)
			if err := k.renew(ctx, l, ids); err != nil {
				wait = min(wait, k.retry)
			}
			cancel()
		}
		select {
		case <-k.stop:
			return
		case <-time.After(wait):
		}
	}
}
