package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
)

// TestInputRequiredNotReused: a read-only tool's "input_required" result
// (2026-07-28 multi-round trip) is handed back as it came but never saved:
// the client's retry, with the same arguments, reaches the server, and its
// final result is what a later identical call reuses.
func TestInputRequiredNotReused(t *testing.T) {
	g, err := mcpguard.NewSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.SawToolsList("", json.RawMessage(`{"tools":[{"name":"ask","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`))
	incomplete := `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{}}},"requestState":"opaque"}`
	final := `{"content":[{"type":"text","text":"done"}]}`
	answers := []string{incomplete, final}
	runs := 0
	call := func(params string) string {
		t.Helper()
		res, err := g.CallTool(context.Background(), json.RawMessage(params), func(context.Context) (json.RawMessage, error) {
			runs++
			return json.RawMessage(answers[min(runs, len(answers))-1]), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(res)
	}
	if got := call(`{"name":"ask","arguments":{}}`); got != incomplete {
		t.Fatalf("first call: %s, want the input_required result as it came", got)
	}
	if got := call(`{"name":"ask","arguments":{},"inputResponses":{"q":{}},"requestState":"opaque"}`); got != final || runs != 2 {
		t.Fatalf("retry: %s after %d runs, want the final result from a second run", got, runs)
	}
	if got := call(`{"name":"ask","arguments":{}}`); got != final || runs != 2 {
		t.Fatalf("third call: %s after %d runs, want the final result reused", got, runs)
	}
}
