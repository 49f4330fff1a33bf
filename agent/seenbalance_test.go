package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExpectedBalanceDecidesAlike checks that Begin's first decision on
// the balance it expects changes no answer: a Guard with a budget and a
// call limit answers a run of calls (new ones, repeats, released ones,
// ones over the budget and past the limit) byte for byte as one that
// forgets the expected balance before each call, as Begin did before it
// kept one.
func TestExpectedBalanceDecidesAlike(t *testing.T) {
	opts := GuardOptions{BudgetUSD: "2", MaxCalls: 9}
	expecting := newGuard(t, newFakeClock(), &opts)
	forgetting := newGuard(t, newFakeClock(), &opts)
	type step struct {
		query, cost string
		release     bool
	}
	steps := []step{
		{"go", "0.3", false}, {"rust", "0.25", false}, {"go", "0.3", false}, {"zig", "0", false},
		{"c", "0.5", true}, {"c", "0.5", false}, {"ada", "1.5", false}, {"lisp", "0.1", false},
		{"ml", "0.2", false}, {"rust", "0.25", false}, {"ocaml", "0.1", false}, {"elm", "0.1", false},
		{"nim", "0.1", false},
	}
	answer := func(g *Guard, forget bool, s step) string {
		if forget {
			g.seen.Store(nil)
		}
		p, rep, err := g.Begin(context.Background(), searchReq(s.query, s.cost))
		out := []any{rep, fmt.Sprint(err)}
		if p != nil {
			if s.release {
				p.Release()
			} else {
				rep, err := p.End(Completion{ResultReference: "ref-" + s.query}, nil)
				out = append(out, rep, fmt.Sprint(err))
			}
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for i, s := range steps {
		want, got := answer(forgetting, true, s), answer(expecting, false, s)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("step %d (%s at %s): the answers differ (-forgetting +expecting):\n%s", i, s.query, s.cost, d)
		}
		t.Logf("step %d: %.160s", i, got)
	}
}

// TestExpectedBalanceSavesADecision checks that a call under a budget and
// a call limit, on the balance Begin expects, is decided once: it
// allocates less than when Begin forgets what to expect and decides twice.
func TestExpectedBalanceSavesADecision(t *testing.T) {
	allocs := func(forget bool) float64 {
		g := newGuard(t, newFakeClock(), &GuardOptions{BudgetUSD: "1000000", MaxCalls: 1 << 20})
		i := 0
		return testing.AllocsPerRun(100, func() {
			if forget {
				g.seen.Store(nil)
			}
			i++
			p, _, err := g.Begin(context.Background(), searchReq(fmt.Sprint("q", i), "0.01"))
			if err != nil || p == nil {
				t.Fatalf("no permit: %v", err)
			}
			p.End(Completion{ResultReference: "r"}, nil)
		})
	}
	once, twice := allocs(false), allocs(true)
	if once >= twice {
		t.Errorf("a call on the expected balance allocates %v times, one deciding twice %v", once, twice)
	}
	t.Logf("on the expected balance %v allocations, deciding twice %v", once, twice)
}
