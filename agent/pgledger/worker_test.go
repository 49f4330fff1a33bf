package pgledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The multi-process tests re-execute the test binary as workers: with
// workerEnv set to a JSON workerConfig, TestWorker spends against the
// shared budget and writes a workerReport to the config's Out file.
const workerEnv = "PGLEDGER_TEST_WORKER"

type workerConfig struct {
	Index      int
	DSN        string
	Scope      string
	BudgetUSD  string
	Goroutines int
	Calls      int // per goroutine
	Lease      time.Duration
	Hang       bool // reserve one call of 0.75, report, then hang until killed
	Out        string
}

type workerReport struct {
	Ran         []ranCall // calls that ran and settled
	Deferred    int
	Unavailable int
	Other       []string
}

type ranCall struct {
	ID      string
	CostUSD string
}

func searchRequest(query, estimate string) preflight.ToolCallRequest {
	return preflight.ToolCallRequest{
		RunID:  "run-pg",
		StepID: query,
		Tool: preflight.ToolCall{
			Provider:                 "search",
			Operation:                "web_search",
			Request:                  json.RawMessage(fmt.Sprintf(`{"query":%q}`, query)),
			EstimatedExternalCostUSD: json.Number(estimate),
		},
		Task:                &preflight.Task{GoalHash: "goal-pg"},
		FreshnessTTLSeconds: "3600",
	}
}

// decimalText writes n × 10^-scale as plain decimal text.
func decimalText(n int64, scale int) string {
	s := new(big.Rat).SetFrac(big.NewInt(n), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// TestWorker is the worker process; it does nothing in a normal run.
func TestWorker(t *testing.T) {
	raw := os.Getenv(workerEnv)
	if raw == "" {
		t.Skip("run only as a worker process of the multi-process tests")
	}
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := New(ctx, pool, cfg.Scope, &Options{Lease: cfg.Lease})
	if err != nil {
		t.Fatal(err)
	}
	g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: st, BudgetUSD: json.Number(cfg.BudgetUSD), Lease: cfg.Lease, NoCoalesce: true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hang {
		p, rep, err := g.Begin(ctx, searchRequest("hang", "0.75"))
		if p == nil {
			t.Fatalf("not reserved: %+v %v", rep.Decision, err)
		}
		if err := os.WriteFile(cfg.Out, []byte(rep.ReservedUSD), 0o600); err != nil {
			t.Fatal(err)
		}
		select {} // until kill -9
	}
	var mu sync.Mutex
	var rep workerReport
	var wg sync.WaitGroup
	for gi := range cfg.Goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cfg.Index), uint64(gi)))
			for i := range cfg.Calls {
				id := fmt.Sprintf("w%d-g%d-%d", cfg.Index, gi, i)
				micro := 1 + rng.Int64N(500_000)
				estimate := decimalText(micro, 6)
				cost := decimalText(rng.Int64N(micro*1000), 9)
				r, err := g.Call(ctx, searchRequest(id, estimate), func(context.Context) (agent.Completion, error) {
					return agent.Completion{CostUSD: json.Number(cost)}, nil
				})
				mu.Lock()
				switch {
				case errors.Is(err, agent.ErrStoreUnavailable):
					rep.Unavailable++
				case r.Called && r.SettledUSD != "" && err == nil:
					rep.Ran = append(rep.Ran, ranCall{ID: id, CostUSD: string(r.SettledUSD)})
				case r.OverBudget || r.Decision != nil && r.Decision.Verdict == preflight.VerdictDefer:
					rep.Deferred++
				default:
					rep.Other = append(rep.Other, fmt.Sprintf("%s: %+v %v", id, r, err))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st.Close()
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(cfg.Out, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func startWorker(t *testing.T, cfg workerConfig) *exec.Cmd {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorker$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

func readReport(t *testing.T, path string) workerReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("worker report: %v", err)
	}
	var r workerReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func sumUSD(t *testing.T, calls []ranCall) *big.Rat {
	t.Helper()
	total := new(big.Rat)
	for _, c := range calls {
		r, ok := new(big.Rat).SetString(c.CostUSD)
		if !ok {
			t.Fatalf("cost %q", c.CostUSD)
		}
		total.Add(total, r)
	}
	return total
}

func rat(t *testing.T, s json.Number) *big.Rat {
	t.Helper()
	r, ok := new(big.Rat).SetString(string(s))
	if !ok {
		t.Fatalf("%q is not a decimal", s)
	}
	return r
}

// load runs goroutines that spend through one Guard until stop is
// closed, each call costing 0.004 of an estimate of 0.01.
type load struct {
	mu          sync.Mutex
	ran         []ranCall
	funcRuns    atomic.Int64
	failedClose atomic.Int64
	other       []string
}

func (l *load) run(g *agent.Guard, goroutines int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for gi := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("g%d-%d", gi, i)
				r, err := g.Call(context.Background(), searchRequest(id, "0.01"), func(context.Context) (agent.Completion, error) {
					l.funcRuns.Add(1)
					time.Sleep(time.Millisecond)
					return agent.Completion{CostUSD: "0.004"}, nil
				})
				l.mu.Lock()
				switch {
				case errors.Is(err, agent.ErrStoreUnavailable):
					l.failedClose.Add(1)
					time.Sleep(5 * time.Millisecond)
				case r.Called && r.SettledUSD != "" && err == nil:
					l.ran = append(l.ran, ranCall{ID: id, CostUSD: string(r.SettledUSD)})
				default:
					l.other = append(l.other, fmt.Sprintf("%s: called %v settled %q: %v", id, r.Called, r.SettledUSD, err))
				}
				l.mu.Unlock()
			}
		}()
	}
	return &wg
}
