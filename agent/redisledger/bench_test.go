package redisledger

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
)

// Run with: go test -run '^$' -bench . -benchmem (a local redis-server is
// started by the benchmark). Compare the redis and memory variants.

func benchStores(b *testing.B) map[string]func() agent.LedgerStore {
	p := startRedis(b)
	c := p.client(b)
	n := 0
	return map[string]func() agent.LedgerStore{
		"memory": func() agent.LedgerStore { return agent.NewMemoryLedgerStore(nil) },
		"redis": func() agent.LedgerStore {
			n++
			s, err := New(c, "bench-"+strconv.Itoa(n), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// BenchmarkReserveSettle is one reservation and its settlement.
func BenchmarkReserveSettle(b *testing.B) {
	stores := benchStores(b)
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			s := stores[name]()
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				id := strconv.Itoa(i)
				ok, _, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: "0.012345", LimitUSD: "1000000000"})
				if !ok || err != nil {
					b.Fatal(ok, err)
				}
				if _, err := s.Settle(ctx, id, "0.01", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGuardCall is a whole Guard.Call (history and balance read,
// Decide, reserve, a no-op tool, settle and record) with 1, 4 and 16
// goroutines sharing one Guard; calls/s is the throughput.
func BenchmarkGuardCall(b *testing.B) {
	stores := benchStores(b)
	for _, name := range []string{"memory", "redis"} {
		for _, workers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/workers=%d", name, workers), func(b *testing.B) {
				g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: stores[name](), BudgetUSD: "1000000000"})
				if err != nil {
					b.Fatal(err)
				}
				var next atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							id := "b" + strconv.FormatInt(i, 10)
							req := searchRequest(id, "0.01", false)
							req.StepID = id
							r, err := g.Call(context.Background(), req, func(context.Context) (agent.Completion, error) {
								return agent.Completion{CostUSD: "0.005"}, nil
							})
							if err != nil || !r.Called {
								b.Error(r.Decision, err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
			})
		}
	}
}
