package pgledger

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/agenttest"
)

// TestConformance runs the ledger store conformance suite against one
// real PostgreSQL, each subtest in a scope of its own.
func TestConformance(t *testing.T) {
	p := startPostgres(t)
	pool := p.pool(t)
	var scopes atomic.Int64
	agenttest.TestLedgerStore(t, func(t *testing.T) agent.LedgerStore {
		s, err := New(t.Context(), pool, "conformance-"+strconv.FormatInt(scopes.Add(1), 10), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
