package openaiguard_test

import (
	"context"
	"maps"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/openaiguard"
)

// TestZeroConfig: with nil options each function is known by its name
// from its first call, so the ticket's terminal failure is not retried;
// the SDK does not say which tools are read-only, so nothing is reused
// until a spec says so, and nothing is charged without prices.
func TestZeroConfig(t *testing.T) {
	sc := agenttest.NewScenario()
	g, err := openaiguard.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	chatLoop(t, g, &chatModel{next: sc.Next}, runners(sc))
	want := map[string]int{agenttest.Search: 7, agenttest.Email: 2, agenttest.Fetch: 3, agenttest.File: 1}
	if got := sc.Counts(); !maps.Equal(got, want) {
		t.Fatalf("executions %v, want %v", got, want)
	}
	if spent, _ := g.Session().Guard().SpentUSD(context.Background()); spent != "0" {
		t.Fatalf("spent %s without prices, want 0", spent)
	}
}
