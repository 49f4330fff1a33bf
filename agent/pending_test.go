package agent

import (
	"context"
	"encoding/json"
	"testing"
)

// TestSessionBeginEnd: the two halves of Session.Call. A released call
// records nothing and frees its money; an ended one is saved and reused;
// End twice is an error.
func TestSessionBeginEnd(t *testing.T) {
	ctx := context.Background()
	s, err := NewSession(quoteToolset(t), &SessionOptions{Guard: GuardOptions{BudgetUSD: "0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"symbol":"AAA"}`)
	p, _, err := s.Begin(ctx, "quote", args)
	if err != nil || p == nil {
		t.Fatalf("first Begin: %v %v", p, err)
	}
	p.Release()
	if s.Guard().SpentUSD() != "0" {
		t.Fatalf("released call spent $%s", s.Guard().SpentUSD())
	}
	p, _, err = s.Begin(ctx, "quote", args)
	if err != nil || p == nil {
		t.Fatalf("Begin after Release: %v %v", p, err)
	}
	ans, err := p.End(ctx, []byte(`{"price":1}`), "", nil)
	if err != nil || ans.How != Ran || ans.Outcome != "success" {
		t.Fatalf("End: %+v %v", ans, err)
	}
	if _, err := p.End(ctx, nil, "", nil); err == nil {
		t.Fatal("second End: no error")
	}
	p, ans, err = s.Begin(ctx, "quote", args)
	if err != nil || p != nil || ans.How != Reused || string(ans.Result) != `{"price":1}` {
		t.Fatalf("repeat: %v %+v %v", p, ans, err)
	}
	p, ans, err = s.Begin(ctx, "quote", json.RawMessage(`{"symbol":"BBB"}`))
	if err != nil || p != nil || ans.How != Withheld || ans.Message == "" {
		t.Fatalf("over budget: %v %+v %v", p, ans, err)
	}
}
