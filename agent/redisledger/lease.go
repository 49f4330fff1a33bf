package redisledger

import (
	"context"
	"time"

	"github.com/agentpreflight/preflight/agent/leases"
)

// newKeeper returns the keeper of this process's leases: it renews them
// every third of the shortest lease (and of IdleTTL, when set, so that the
// scope's keys do not expire while a call runs), with renewScript, which
// also extends the expiry of the scope's keys.
func (s *Store) newKeeper() *leases.Keeper {
	var every time.Duration
	if s.idle > 0 {
		every = max(s.idle/3, time.Millisecond)
	}
	return leases.New(func(ctx context.Context, lease time.Duration, ids []string) error {
		tks := make([]any, 0, len(ids))
		for _, id := range ids {
			tks = append(tks, token(id))
		}
		_, _, err := s.run(ctx, renewScript, packer{}.num(ms(lease)).num(ms(s.idle)).num(ms(s.keep)), tks...)
		return err
	}, leases.Options{Lease: s.lease, MaxInterval: every})
}
