package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
)

// yieldStore gives the other goroutines a chance before each reservation
// and after it, so that decisions interleave, and refuses a reservation
// whose context is already done (as a remote store would).
type yieldStore struct{ LedgerStore }

func (s yieldStore) ReserveOf(ctx context.Context, r Reservation, fp string) (bool, LedgerState, error) {
	runtime.Gosched()
	if err := ctx.Err(); err != nil {
		return false, LedgerState{}, err
	}
	ok, st, err := s.LedgerStore.ReserveOf(ctx, r, fp)
	runtime.Gosched()
	return ok, st, err
}

// TestGuardLockingStress: many goroutines on one Guard with a tight budget
// and call limit propose identical and different calls, through Call and
// through Begin with End or Release, some with contexts that end at any
// point (waiting for their turn, at the gate, on the store, running),
// some panicking, while SetCatalog, SetBudget and RaiseBudget keep
// changing the Guard (to the same values). Afterwards: nothing is held,
// every call counted is one that was allowed, the spending is the sum of
// the settled costs and within the budget, the calls within MaxCalls,
// and the Guard's bookkeeping (turns, gate, flights) and goroutines are
// back to rest.
func TestGuardLockingStress(t *testing.T) {
	for _, tt := range []struct {
		name     string
		budget   json.Number
		maxCalls int
	}{
		{"the budget binds", "2", 1000},
		{"the call limit binds", "1000", 12},
	} {
		t.Run(tt.name, func(t *testing.T) { guardLockingStress(t, tt.budget, tt.maxCalls) })
	}
}

func guardLockingStress(t *testing.T, budget json.Number, maxCalls int) {
	const workers, each = 16, 40
	before := runtime.NumGoroutine()
	st := yieldStore{NewMemoryLedgerStore(nil)}
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: budget, MaxCalls: maxCalls, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	changed := make(chan struct{})
	go func() {
		defer close(changed)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 3 {
			case 0:
				g.SetCatalog(nil)
			case 1:
				if err := g.SetBudget(budget); err != nil {
					t.Error(err)
				}
			case 2:
				if _, err := g.RaiseBudget("0"); err != nil {
					t.Error(err)
				}
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()

	var mu sync.Mutex
	settled := new(big.Rat)
	permits := 0
	addSettled := func(rep Report) {
		mu.Lock()
		defer mu.Unlock()
		if rep.SettledUSD != "" {
			r, ok := new(big.Rat).SetString(string(rep.SettledUSD))
			if !ok {
				t.Errorf("SettledUSD %q", rep.SettledUSD)
				return
			}
			settled.Add(settled, r)
		}
	}
	counted := func() {
		mu.Lock()
		permits++
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range each {
				query := fmt.Sprintf("shared-%d", rnd.IntN(4))
				if rnd.IntN(2) == 0 {
					query = fmt.Sprintf("own-%d-%d", w, i)
				}
				cents := 5 + rnd.IntN(20)
				est := fmt.Sprintf("0.%02d", cents)
				req := searchReq(query, est)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rnd.IntN(3) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rnd.IntN(300))*time.Microsecond)
				}
				cost := fmt.Sprintf("0.%02d", cents-rnd.IntN(2)) // the estimate or a cent less
				outcome := preflight.OutcomeSuccess
				if rnd.IntN(3) == 0 {
					outcome = preflight.OutcomeTransientFailure
				}
				switch rnd.IntN(4) {
				case 0, 1: // Call, which may panic
					panics := rnd.IntN(8) == 0
					func() {
						defer func() {
							if r := recover(); r != nil && r != "tool panicked" {
								panic(r)
							}
						}()
						rep, err := g.Call(ctx, req, func(context.Context) (Completion, error) {
							counted()
							runtime.Gosched()
							if panics {
								r, _ := new(big.Rat).SetString(est)
								mu.Lock()
								settled.Add(settled, r) // settled at its estimate
								mu.Unlock()
								panic("tool panicked")
							}
							return Completion{Outcome: outcome, ResultReference: "r-" + query, CostUSD: json.Number(cost)}, nil
						})
						if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
							t.Errorf("Call: %v", err)
						}
						addSettled(rep)
						if rep.InFlight != nil {
							_, _ = rep.InFlight.Wait(ctx)
						}
					}()
				default: // Begin, then End or Release
					p, rep, err := g.Begin(ctx, req)
					if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
						t.Errorf("Begin: %v", err)
					}
					if rep.InFlight != nil {
						_, _ = rep.InFlight.Wait(ctx)
					}
					if p == nil {
						break
					}
					counted()
					runtime.Gosched()
					if rnd.IntN(4) == 0 {
						p.Release()
						break
					}
					rep, err = p.End(Completion{Outcome: outcome, ResultReference: "r-" + query, CostUSD: json.Number(cost)}, nil)
					if err != nil {
						t.Errorf("End: %v", err)
					}
					addSettled(rep)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-changed

	s, err := st.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := s.Balance
	spent, ok := new(big.Rat).SetString(string(b.SpentUSD))
	if !ok {
		t.Fatalf("SpentUSD %q", b.SpentUSD)
	}
	limit, _ := new(big.Rat).SetString(string(budget))
	if b.ReservedUSD != "0" || spent.Cmp(limit) > 0 || b.Calls != permits || b.Calls > maxCalls {
		t.Errorf("balance %+v after %d permits; want nothing held, at most %s spent and %d calls, one per permit", b, permits, budget, maxCalls)
	}
	if spent.Cmp(settled) != 0 {
		t.Errorf("spent %s, want the %s the calls settled (their Reports, and the estimates of those that panicked)", b.SpentUSD, settled.FloatString(2))
	}
	if permits == 0 {
		t.Error("no call was allowed")
	}

	g.mu.Lock()
	turns, spare, deciding, changing, waiting, flights := len(g.turns), len(g.spareTurns), g.deciding, g.changing, g.changesWaiting, len(g.flights)
	tentative, settleWaiters := g.tentative, g.settleWake != nil
	g.mu.Unlock()
	if turns != 0 || spare > maxSpareTurns || deciding != 0 || changing || waiting != 0 || flights != 0 || tentative != 0 || settleWaiters {
		t.Errorf("at rest: %d turns, %d spare, %d deciding, changing %v, %d changes waiting, %d flights, %d tentative decisions, waiters for them %v; want none, at most %d spare",
			turns, spare, deciding, changing, waiting, flights, tentative, settleWaiters, maxSpareTurns)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the calls, %d before", n, before)
	}
}
