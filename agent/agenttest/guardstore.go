package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// guardRequest is a read-only search for query with the estimate est,
// every query its own fingerprint.
func guardRequest(query string, est string) preflight.ToolCallRequest {
	return preflight.ToolCallRequest{
		RunID:  "run-guard",
		StepID: "step-" + query,
		Tool: preflight.ToolCall{
			Provider:                 "search",
			Operation:                "web_search",
			Request:                  json.RawMessage(`{"query":` + strconv.Quote(query) + `}`),
			EstimatedExternalCostUSD: json.Number(est),
		},
		Task:                &preflight.Task{GoalHash: "goal-guard"},
		FreshnessTTLSeconds: "60",
	}
}

// guardParallelBudget: one Guard on the store, many goroutines proposing
// different calls at once (their reservations overlap) over a budget they
// cannot all fit: what was spent stays within the budget and is the sum of
// the costs the calls reported, to the digit, and nothing stays held.
func guardParallelBudget(t *testing.T, st agent.LedgerStore) {
	const budget = "3"
	g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: st, BudgetUSD: budget})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 16, 8
	var mu sync.Mutex
	total, ran, refused := new(big.Rat), 0, 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := w*each + i
				est := fmt.Sprintf("0.%02d", 1+n%9)      // 0.01 to 0.09
				cost := fmt.Sprintf("0.%02d", 1+n%9-n%2) // the estimate, or a cent less
				rep, err := g.Call(context.Background(), guardRequest(fmt.Sprintf("q%d", n), est), func(context.Context) (agent.Completion, error) {
					return agent.Completion{CostUSD: json.Number(cost), ResultReference: "r"}, nil
				})
				if err != nil {
					t.Errorf("call %d: %v", n, err)
					return
				}
				mu.Lock()
				if rep.Called {
					ran++
					total.Add(total, money(t, "SettledUSD", rep.SettledUSD))
				} else {
					refused++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b := state(t, st).Balance
	spent := money(t, "SpentUSD", b.SpentUSD)
	if spent.Cmp(total) != 0 || spent.Cmp(money(t, "budget", budget)) > 0 || money(t, "ReservedUSD", b.ReservedUSD).Sign() != 0 {
		t.Errorf("after %d calls ran and %d were refused: spent %s, held %s; want the sum of the reported costs %s, at most %s, and nothing held",
			ran, refused, b.SpentUSD, b.ReservedUSD, total.FloatString(2), budget)
	}
	if refused == 0 || ran == 0 {
		t.Errorf("%d calls ran, %d refused: the budget should let some run and not all", ran, refused)
	}
}

// guardParallelCalls: one Guard with MaxCalls on the store, more
// goroutines than calls allowed proposing different calls at once, each
// holding its permit until every proposal was answered: exactly MaxCalls
// permits.
func guardParallelCalls(t *testing.T, st agent.LedgerStore) {
	const maxCalls, workers = 5, 16
	g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: st, BudgetUSD: "100", MaxCalls: maxCalls})
	if err != nil {
		t.Fatal(err)
	}
	permits := make(chan *agent.Permit, workers)
	var wg sync.WaitGroup
	for n := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, _, err := g.Begin(context.Background(), guardRequest(fmt.Sprintf("c%d", n), "0.01"))
			if err != nil {
				t.Errorf("Begin %d: %v", n, err)
			}
			if p != nil {
				permits <- p
			}
		}()
	}
	wg.Wait()
	close(permits)
	got := 0
	for p := range permits {
		got++
		if _, err := p.End(agent.Completion{ResultReference: "r"}, nil); err != nil {
			t.Errorf("End: %v", err)
		}
	}
	if got != maxCalls {
		t.Errorf("%d of %d calls proposed at once were allowed under MaxCalls %d, want exactly %d", got, workers, maxCalls, maxCalls)
	}
	wantBalance(t, "after the calls", state(t, st).Balance, "0.05", "0", maxCalls)
}
