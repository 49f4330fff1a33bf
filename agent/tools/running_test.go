package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight/agent"
)

// TestSessionStartFinish: the two halves of Session.Call (Start, Finish). A released call
// records nothing and frees its money; an ended one is saved and reused;
// Finish twice is an error.
func TestSessionStartFinish(t *testing.T) {
	ctx := context.Background()
	s, err := NewSession(quoteSet(t), &SessionOptions{Guard: agent.GuardOptions{BudgetUSD: "0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"symbol":"AAA"}`)
	p, _, err := s.Start(ctx, "quote", args)
	if err != nil || p == nil {
		t.Fatalf("first Begin: %v %v", p, err)
	}
	p.Release()
	if spent(t, s.Guard()) != "0" {
		t.Fatalf("released call spent $%s", spent(t, s.Guard()))
	}
	p, _, err = s.Start(ctx, "quote", args)
	if err != nil || p == nil {
		t.Fatalf("Begin after Release: %v %v", p, err)
	}
	ans, err := p.Finish(ctx, []byte(`{"price":1}`), "", nil)
	if err != nil || ans.How != HowRan || ans.Outcome != "success" {
		t.Fatalf("End: %+v %v", ans, err)
	}
	if _, err := p.Finish(ctx, nil, "", nil); err == nil {
		t.Fatal("second End: no error")
	}
	p, ans, err = s.Start(ctx, "quote", args)
	if err != nil || p != nil || ans.How != HowReused || string(ans.Result) != `{"price":1}` {
		t.Fatalf("repeat: %v %+v %v", p, ans, err)
	}
	p, ans, err = s.Start(ctx, "quote", json.RawMessage(`{"symbol":"BBB"}`))
	if err != nil || p != nil || ans.How != HowWithheld || ans.Message == "" {
		t.Fatalf("over budget: %v %+v %v", p, ans, err)
	}
}
