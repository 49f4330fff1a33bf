package mcpguard_test

import (
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
)

// callToolAllocBudgets bound the allocations of one guarded tools/call, as
// a proxy makes it (Session.CallTool with 100 entries of other calls in
// the session's history), besides the two decisions of the library that
// every call asks for (agent.Guard.Begin decides once to learn the
// call's fingerprint, then on its history and money; the second decision
// reads the call's payload and fingerprint kept from the first, and so
// allocates less than the Decide counted for it here). A call that runs
// also reads the result to classify its outcome (a scan of its bytes for
// the plain results tools give) and saves it; a reuse reads the saved
// result.
var callToolAllocBudgets = map[string]float64{
	"run/h100":   8, // measured 6-8 (was 8, when the library's share is 30-32)
	"reuse/h100": 7, // measured 4-6 (was 10-12)
}

func TestCallToolAllocationBudgets(t *testing.T) {
	if mcpguard.RaceEnabled() {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	// The library's share: a decision on the proposal the session makes.
	req := preflight.ToolCallRequest{
		RunID: "session", StepID: "call-1",
		Tool: preflight.ToolCall{Provider: "mcp", Operation: "quote", Request: quoteParams("X")[len(`{"name":"quote","arguments":`) : len(quoteParams("X"))-1],
			EstimatedExternalCostUSD: "0"},
		Budget:              preflight.Budget{RemainingUSD: "1000000"},
		Task:                &preflight.Task{GoalHash: "session"},
		Capabilities:        &preflight.Capabilities{CanReusePriorResult: true},
		FreshnessTTLSeconds: "300",
	}
	library := 2 * testing.AllocsPerRun(50, func() {
		if _, err := preflight.Decide(&req); err != nil {
			t.Fatal(err)
		}
	})
	for _, c := range []struct {
		name  string
		reuse bool
	}{{"run/h100", false}, {"reuse/h100", true}} {
		s := benchSession(t, 100)
		same := quoteParams("SAME")
		benchCall(t, s, same)
		i := 0
		all := testing.AllocsPerRun(200, func() {
			params := same
			if !c.reuse {
				i++
				params = quoteParams("N" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)))
			}
			benchCall(t, s, params)
		})
		if got, budget := all-library, callToolAllocBudgets[c.name]; got > budget {
			t.Errorf("%s: a guarded call allocates %v times besides the library's %v; budget %v", c.name, got, library, budget)
		} else {
			t.Logf("%s: %v allocations besides the library's %v (budget %v)", c.name, got, library, budget)
		}
	}
}
