package agent_test

import (
	"testing"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/agenttest"
)

func TestMemoryLedgerStoreConformance(t *testing.T) {
	agenttest.TestLedgerStore(t, func(*testing.T) agent.LedgerStore { return agent.NewMemoryLedgerStore(nil) })
}
