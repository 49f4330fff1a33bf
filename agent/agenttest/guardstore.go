package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"runtime"
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

// guardMixed: one Guard on the store, a tight budget and call limit, many
// goroutines proposing identical read-only calls (coalesced onto one
// another, or reusing a result) and different ones at once, through Call
// (some of whose functions panic) and through Begin with End or Release,
// while SetCatalog, SetBudget and RaiseBudget keep changing the Guard (to
// the same values): nothing stays held, each call counted is a permit the
// Guard gave, and the spending is the sum of what the calls settled,
// within the budget, in at most MaxCalls calls.
func guardMixed(t *testing.T, st agent.LedgerStore) {
	const budget, maxCalls, workers, each = "1.5", 24, 12, 20
	g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: st, BudgetUSD: budget, MaxCalls: maxCalls})
	if err != nil {
		t.Fatal(err)
	}
	stop, changed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(changed)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			var err error
			switch i % 3 {
			case 0:
				g.SetCatalog(nil)
			case 1:
				err = g.SetBudget(budget)
			case 2:
				_, err = g.RaiseBudget("0")
			}
			if err != nil {
				t.Error(err)
			}
			runtime.Gosched()
		}
	}()
	var mu sync.Mutex
	settled, permits := new(big.Rat), 0
	count := func(usd json.Number) {
		mu.Lock()
		defer mu.Unlock()
		settled.Add(settled, money(t, "settled", usd))
	}
	allowed := func() {
		mu.Lock()
		permits++
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := w*each + i
				query := fmt.Sprintf("shared-%d", n%3)
				if n%2 == 1 {
					query = fmt.Sprintf("own-%d", n)
				}
				cents := 3 + n%17
				req := guardRequest(query, fmt.Sprintf("0.%02d", cents))
				req.Capabilities = &preflight.Capabilities{CanReusePriorResult: true}
				res := agent.Completion{ResultReference: "r-" + query, CostUSD: json.Number(fmt.Sprintf("0.%02d", cents-n%2))}
				if n%5 == 0 {
					res.Outcome = preflight.OutcomeTransientFailure
				}
				switch n % 4 {
				case 0, 1:
					rep, err := guardCallRecovering(g, req, n%7 == 0, res, allowed, count)
					if err != nil {
						t.Errorf("call %d: %v", n, err)
					}
					count(rep.SettledUSD)
					if rep.InFlight != nil {
						_, _ = rep.InFlight.Wait(context.Background())
					}
				default:
					p, rep, err := g.Begin(context.Background(), req)
					if err != nil {
						t.Errorf("Begin %d: %v", n, err)
					}
					if rep.InFlight != nil {
						_, _ = rep.InFlight.Wait(context.Background())
					}
					if p == nil {
						continue
					}
					allowed()
					runtime.Gosched()
					if n%3 == 0 {
						p.Release()
						continue
					}
					rep, err = p.End(res, nil)
					if err != nil {
						t.Errorf("End %d: %v", n, err)
					}
					count(rep.SettledUSD)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-changed
	b := state(t, st).Balance
	spent := money(t, "SpentUSD", b.SpentUSD)
	if spent.Cmp(settled) != 0 || spent.Cmp(money(t, "budget", budget)) > 0 || money(t, "ReservedUSD", b.ReservedUSD).Sign() != 0 ||
		b.Calls != permits || b.Calls > maxCalls {
		t.Errorf("after %d permits: balance %+v; want the %s the calls settled, at most %s, nothing held, and one call per permit, at most %d",
			permits, b, settled.FloatString(2), budget, maxCalls)
	}
	if permits == 0 {
		t.Error("no call was allowed")
	}
}

// guardCallRecovering makes a Call whose function reports res, or panics
// when panics is set, telling allowed when it runs and count what a
// panicking call is settled at (its estimate).
func guardCallRecovering(g *agent.Guard, req preflight.ToolCallRequest, panics bool, res agent.Completion, allowed func(), count func(json.Number)) (rep agent.Report, err error) {
	defer func() {
		if r := recover(); r != nil && r != "tool panicked" {
			panic(r)
		}
	}()
	return g.Call(context.Background(), req, func(context.Context) (agent.Completion, error) {
		allowed()
		runtime.Gosched()
		if panics {
			count(req.Tool.EstimatedExternalCostUSD)
			panic("tool panicked")
		}
		return res, nil
	})
}
