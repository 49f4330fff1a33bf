package redisledger

import (
	"context"
	"time"
)

// hold notes that this process holds reservation id with the given lease,
// and starts the renewer if it is not running.
func (s *Store) hold(id string, lease time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases[id] = lease
	if !s.renewer {
		s.renewer = true
		go s.renew()
	}
}

func (s *Store) unhold(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.leases, id)
}

// renewRetry is how soon a renewal that failed is tried again.
const renewRetry = 100 * time.Millisecond

// renew extends, every third of the shortest lease (and of IdleTTL, when
// set), the leases of the reservations this process holds and the expiry
// of the scope's keys, until Close. A process that dies stops renewing,
// and its holds expire.
//
// Each try waits for Redis (with ContextTimeoutEnabled) a third of the
// shortest lease, the time a renewal has before the next one is due,
// whatever IdleTTL: IdleTTL sets only how often renewals go, never how
// long one may take. One that failed is tried again after renewRetry,
// not a third later, so that a renewal reaches Redis soon after an
// interruption ends: a hold lapses only when none has reached Redis for a
// whole lease.
func (s *Store) renew() {
	for {
		s.mu.Lock()
		shortest := s.lease
		byLease := make(map[time.Duration][]any)
		for id, l := range s.leases {
			shortest = min(shortest, l)
			byLease[l] = append(byLease[l], id)
		}
		s.mu.Unlock()
		try := max(shortest/3, time.Millisecond)
		every := try
		if s.idle > 0 {
			every = min(every, max(s.idle/3, time.Millisecond))
		}
		wait := every
		for l, ids := range byLease {
			ctx, cancel := context.WithTimeout(context.Background(), try)
			if _, _, err := s.run(ctx, renewScript, append([]any{ms(l)}, ids...)...); err != nil {
				wait = min(wait, renewRetry)
			}
			cancel()
		}
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
	}
}
