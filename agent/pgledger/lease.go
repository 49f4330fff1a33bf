package pgledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

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

// renew extends, every third of the shortest lease, the leases of the
// reservations this process holds, until Close. Each try waits a third of
// the shortest lease; one that failed is tried again after renewRetry. A
// process that dies stops renewing, and its holds expire.
func (s *Store) renew() {
	for {
		s.mu.Lock()
		shortest := s.lease
		byLease := make(map[time.Duration][]string)
		for id, l := range s.leases {
			shortest = min(shortest, l)
			byLease[l] = append(byLease[l], id)
		}
		s.mu.Unlock()
		every := max(shortest/3, time.Millisecond)
		wait := every
		for l, ids := range byLease {
			ctx, cancel := context.WithTimeout(context.Background(), every)
			if _, err := s.db.Exec(ctx, "SELECT preflight_renew($1, $2, $3, $4)", s.scope, ids, ms(l), ms(s.keep)); err != nil {
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
