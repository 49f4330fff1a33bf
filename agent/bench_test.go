package agent

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight"
)

// fullLedger returns a ledger holding preflight.MaxHistory distinct successes.
func fullLedger(b *testing.B) *Ledger {
	l := NewLedger(nil)
	for i := range preflight.MaxHistory {
		if err := l.Record(Entry{ToolCallID: fmt.Sprint(i), Fingerprint: fp(i), Outcome: preflight.OutcomeSuccess, ResultReference: "r", GoalHash: "g1"}); err != nil {
			b.Fatal(err)
		}
	}
	return l
}

func BenchmarkLedgerRecordFull(b *testing.B) {
	l := fullLedger(b)
	i := preflight.MaxHistory
	for b.Loop() {
		i++
		if err := l.Record(Entry{ToolCallID: "x", Fingerprint: fp(i), Outcome: preflight.OutcomeTerminalFailure}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLedgerHistoryFull(b *testing.B) {
	l := fullLedger(b)
	for b.Loop() {
		_ = history(b, l)
	}
}

// BenchmarkGuardCall is one allowed call through a Guard whose ledger holds
// 100 entries: history copy, Decide (which encodes and decodes the whole
// request), recording and one eviction.
func BenchmarkGuardCall(b *testing.B) {
	g, err := NewGuard(fullLedger(b), &GuardOptions{BudgetUSD: "1000000"})
	if err != nil {
		b.Fatal(err)
	}
	call := func(context.Context) (Completion, error) { return Completion{ResultReference: "r"}, nil }
	i := 0
	for b.Loop() {
		i++
		req := searchReq(fmt.Sprint("benchmark query ", i), "0.005")
		if _, err := g.Call(context.Background(), req, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardCallParallel is BenchmarkGuardCall from 1 and from 16
// goroutines at once on one Guard, each call with its own fingerprint:
// they decide and reserve at the same time and share the money.
func BenchmarkGuardCallParallel(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprint("goroutines=", n), func(b *testing.B) {
			g, err := NewGuard(fullLedger(b), &GuardOptions{BudgetUSD: "1000000", MaxCalls: 1_000_000_000})
			if err != nil {
				b.Fatal(err)
			}
			call := func(context.Context) (Completion, error) { return Completion{ResultReference: "r"}, nil }
			var next atomic.Int64
			b.SetParallelism(n)
			old := runtime.GOMAXPROCS(1) // n goroutines in all
			defer runtime.GOMAXPROCS(old)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := searchReq(fmt.Sprint("benchmark query ", next.Add(1)), "0.005")
					if _, err := g.Call(context.Background(), req, call); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
