package pgledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/agentpreflight/preflight/agent/leases"
)

func newNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newKeeper returns the keeper of this process's leases: it renews them
// every third of the shortest lease with preflight_renew.
func (s *Store) newKeeper() *leases.Keeper {
	return leases.New(func(ctx context.Context, lease time.Duration, ids []string) error {
		_, err := s.db.Exec(ctx, "SELECT preflight_renew($1, $2, $3, $4)", s.scope, ids, ms(lease), ms(s.keep))
		return err
	}, leases.Options{Lease: s.lease})
}
