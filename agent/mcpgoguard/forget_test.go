package mcpgoguard_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
)

// TestSessionsAndForget: each client session has its own guard state
// (its own spending and saved results), and Forget drops one: the
// session's next call starts afresh.
func TestSessionsAndForget(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	g, err := mcpgoguard.New(&adapt.Options{Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	srv := scenarioServer(sc, inBand)
	srv.Use(g.Middleware())
	a, b := connect(t, srv), connect(t, srv)
	search := request(agenttest.Call{Tool: agenttest.Search, Args: `{"q":"alpha"}`})
	if _, err := a.CallTool(ctx, search); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CallTool(ctx, search); err != nil { // another session: not reused
		t.Fatal(err)
	}
	ids := g.Sessions()
	if len(ids) != 2 || sc.Counts()[agenttest.Search] != 2 {
		t.Fatalf("sessions %v, searches %d; want 2, 2", ids, sc.Counts()[agenttest.Search])
	}
	for _, id := range ids {
		if spent, _ := g.Session(id).Guard().SpentUSD(ctx); spent != agenttest.SearchPrice {
			t.Fatalf("session %s spent %s, want %s", id, spent, agenttest.SearchPrice)
		}
	}
	if _, err := a.CallTool(ctx, search); err != nil { // the same session: reused
		t.Fatal(err)
	}
	if n := sc.Counts()[agenttest.Search]; n != 2 {
		t.Fatalf("searches %d after a repeat, want 2", n)
	}
	g.Forget(ids[0])
	if got := g.Sessions(); slices.Contains(got, ids[0]) || g.Session(ids[0]) != nil {
		t.Fatalf("sessions %v after Forget(%s)", got, ids[0])
	}
	if _, err := a.CallTool(ctx, search); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CallTool(ctx, search); err != nil {
		t.Fatal(err)
	}
	// One of the two ran again (the forgotten session's), the other reused.
	if n := sc.Counts()[agenttest.Search]; n != 3 {
		t.Fatalf("searches %d after Forget, want 3", n)
	}
}
