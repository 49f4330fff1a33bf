package pgledger

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Run with: go test -run '^$' -bench . -benchmem (a PostgreSQL is
// initialised and started by the benchmark). Each benchmark reports
// calls/s and the statements (round trips) sent per call, counted by a
// pgx tracer, with a history of 0 and of MaxHistory entries.

// queries counts the statements a pool sends.
type queries struct{ n atomic.Int64 }

func (q *queries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queries) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// BenchmarkGuardCall is a whole Guard.Call (balance and the history of the
// call's fingerprint read, Decide, reserve, a no-op tool, settle and
// record) with 1, 4 and 16 goroutines sharing one Guard, on a history of
// 0 or MaxHistory entries.
func BenchmarkGuardCall(b *testing.B) {
	p := startPostgres(b)
	scopes := 0
	for _, history := range []int{0, preflight.MaxHistory} {
		for _, workers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("history=%d/goroutines=%d", history, workers), func(b *testing.B) {
				cfg, err := pgxpool.ParseConfig(p.dsn())
				if err != nil {
					b.Fatal(err)
				}
				q := new(queries)
				cfg.ConnConfig.Tracer = q
				pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				scopes++
				s, err := New(context.Background(), pool, "bench-"+strconv.Itoa(scopes), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				for i := range history {
					e := agent.Entry{ToolCallID: "h" + strconv.Itoa(i), Fingerprint: fmt.Sprintf("%064x", i+1), Outcome: preflight.OutcomeSuccess, ResultReference: "r", GoalHash: "g"}
					if err := s.Append(context.Background(), e); err != nil {
						b.Fatal(err)
					}
				}
				g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "1000000000"})
				if err != nil {
					b.Fatal(err)
				}
				q0 := q.n.Load()
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
							r, err := g.Call(context.Background(), searchRequest(id, "0.01"), func(context.Context) (agent.Completion, error) {
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
				took := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(b.N)/took.Seconds(), "calls/s")
				b.ReportMetric(float64(q.n.Load()-q0)/float64(b.N), "roundtrips/call")
			})
		}
	}
}
