package redisledger

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/tools"
)

// TestConformance runs the stores' conformance suites against one real
// redis-server, each subtest in a scope of its own.
func TestConformance(t *testing.T) {
	p := startRedis(t)
	var scopes atomic.Int64
	scope := func() string { return "conformance-" + strconv.FormatInt(scopes.Add(1), 10) }
	t.Run("LedgerStore", func(t *testing.T) {
		agenttest.TestLedgerStore(t, func(t *testing.T) agent.LedgerStore { return newStore(t, p, scope(), nil) })
	})
	t.Run("ResultStore", func(t *testing.T) {
		agenttest.TestResultStore(t, func(t *testing.T) tools.ResultStore {
			s, err := NewResultStore(p.client(t), scope(), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	})
}
