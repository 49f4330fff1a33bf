package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
)

// TestUnknownToolPastCallLimit: once the session's call limit is reached,
// a call of a tool the catalog lacks (which Decide only advises on) is
// withheld for the limit, and says so: CALL_LIMIT_REACHED first, the
// limit's sentence, not the budget's (the money still fits).
func TestUnknownToolPastCallLimit(t *testing.T) {
	s, err := mcpguard.NewSession(&mcpguard.Options{BudgetUSD: "1", MaxCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SawToolsList("", json.RawMessage(benchTools))
	for i := range 2 {
		benchCall(t, s, quoteParams(fmt.Sprint("S", i)))
	}
	res, err := s.CallTool(context.Background(), json.RawMessage(`{"name":"nope","arguments":{}}`), forwardQuote)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		StructuredContent struct {
			Preflight struct {
				Message     string   `json:"message"`
				ReasonCodes []string `json:"reasonCodes"`
			} `json:"preflight"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	p := r.StructuredContent.Preflight
	if len(p.ReasonCodes) == 0 || p.ReasonCodes[0] != "CALL_LIMIT_REACHED" || !strings.Contains(p.Message, "tool-call limit") {
		t.Errorf("unknown tool past the call limit: %s", res)
	}
}
