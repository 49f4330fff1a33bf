package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// TestRaiseBudget: raises made at once while calls are decided all count
// (the budget ends exact), every call that ran was within the budget of
// its moment, and what was spent is kept.
func TestRaiseBudget(t *testing.T) {
	ctx := context.Background()
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "0.05"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ran := make(chan struct{}, 200)
	for i := range 100 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := g.RaiseBudget("0.01"); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			rep, err := g.Call(ctx, searchReq(fmt.Sprint("q", i), "0.01"), func(context.Context) (Completion, error) { return Completion{}, nil })
			if err != nil {
				t.Error(err)
			}
			if rep.Called {
				ran <- struct{}{}
			}
		}()
	}
	wg.Wait()
	close(ran)
	if b := g.BudgetUSD(); b != "1.05" {
		t.Fatalf("budget %s after 100 raises of 0.01 on 0.05, want 1.05", b)
	}
	spent, _ := g.SpentUSD(ctx)
	w, _ := parseUSD(json.Number(fmt.Sprintf("%d.%02d", len(ran)/100, len(ran)%100)))
	want := formatUSD(w)
	if len(ran) < 5 || spent != want {
		t.Fatalf("%d calls ran, spent %s; want at least the 5 the first budget holds, spent %s", len(ran), spent, want)
	}
	// Lowered below the spending: nothing left, nothing undone.
	if err := g.SetBudget("0"); err != nil {
		t.Fatal(err)
	}
	rep, err := g.Call(ctx, searchReq("late", "0.01"), func(context.Context) (Completion, error) { return Completion{}, nil })
	if err != nil || rep.Called {
		t.Fatalf("a call on a budget below the spending: called %v, %v", rep.Called, err)
	}
	if s, _ := g.SpentUSD(ctx); s != spent {
		t.Fatalf("spent %s after lowering the budget, want %s kept", s, spent)
	}
}

// TestSetBudgetRefuses: malformed budgets and raises change nothing; a
// Guard without a budget cannot be raised, but can be given one.
func TestSetBudgetRefuses(t *testing.T) {
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []json.Number{"-1", "abc", ""} {
		if err := g.SetBudget(b); err == nil {
			t.Errorf("SetBudget(%q) succeeded", b)
		}
		if _, err := g.RaiseBudget(b); err == nil {
			t.Errorf("RaiseBudget(%q) succeeded", b)
		}
	}
	if g.BudgetUSD() != "1" {
		t.Fatalf("budget %s after refused changes, want 1", g.BudgetUSD())
	}
	free, _ := NewGuard(nil, nil)
	if _, err := free.RaiseBudget("1"); err == nil {
		t.Fatal("RaiseBudget on a Guard without a budget succeeded")
	}
	if err := free.SetBudget("0.5"); err != nil || free.BudgetUSD() != "0.5" {
		t.Fatalf("SetBudget on a Guard without a budget: %v, budget %s", err, free.BudgetUSD())
	}
	if b, err := free.RaiseBudget("0.25"); err != nil || b != "0.75" {
		t.Fatalf("RaiseBudget after SetBudget: %s, %v; want 0.75", b, err)
	}
}

// TestSetCatalogWhileCalling: the catalog replaced while calls are
// decided (an adapter adding the tools a framework describes, from
// parallel tool calls) is no data race (go test -race) and every call is
// decided.
func TestSetCatalogWhileCalling(t *testing.T) {
	ctx := context.Background()
	g, err := NewGuard(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			g.SetCatalog(nil)
		}()
		go func() {
			defer wg.Done()
			rep, err := g.Call(ctx, searchReq(fmt.Sprint("q", i), "0.01"), func(context.Context) (Completion, error) { return Completion{}, nil })
			if err != nil || rep.Decision == nil {
				t.Errorf("call %d: %v, %+v", i, err, rep)
			}
		}()
	}
	wg.Wait()
}
