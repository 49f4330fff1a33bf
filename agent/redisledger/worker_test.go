package redisledger

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
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/redis/go-redis/v9"
)

// The multi-process tests re-execute the test binary as workers: with
// workerEnv set to a JSON workerConfig, TestWorker spends against the
// shared budget and writes a workerReport to the config's Out file.
const workerEnv = "REDISLEDGER_TEST_WORKER"

type workerConfig struct {
	Index      int
	Addrs      []string
	Cluster    bool
	Scope      string
	BudgetUSD  string
	Goroutines int
	Calls      int           // per goroutine
	Lease      time.Duration // zero: the store's default
	Hang       bool          // reserve one call, report, then hang until killed
	// WaitReplicas is the store's Options.WaitReplicas.
	WaitReplicas int
	ToolDelay    time.Duration // how long each tool call takes
	// ProviderLog, when set, is a file each call appends "id cost\n" to as
	// it reaches its provider, before it settles: what the provider
	// charged, whatever happens to the worker afterwards.
	ProviderLog string
	Out         string
}

// workerReport is what one worker did.
type workerReport struct {
	Ran          []ranCall // calls whose function ran and whose End returned
	Deferred     int       // not run: over budget (decision or reservation)
	Reused       int       // reuse decisions whose saved bytes matched
	CrossReused  int       // ... saved by another worker process
	ReuseMissing int       // reuse decisions whose result was not found
	ReuseWrong   int       // reuse decisions whose bytes differed
	Coalesced    int
	Unavailable  int // Begin failed closed: the store could not be reached
	RanUnplanned int // a call function ran without a permit (must be 0)
	Other        []string
}

type ranCall struct {
	ID      string
	CostUSD string
}

// decimalText writes n × 10^-scale as plain decimal text.
func decimalText(n int64, scale int) string {
	r := new(big.Rat).SetFrac(big.NewInt(n), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	s := r.FloatString(scale)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func (c workerConfig) client() redis.UniversalClient {
	o := &redis.UniversalOptions{Addrs: c.Addrs, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true}
	if c.Cluster {
		o.IsClusterMode = true
		o.MaxRedirects = 8
	} else {
		o.MaxRetries = -1 // fail closed fast: the Guard refuses, the caller retries
	}
	return redis.NewUniversalClient(o)
}

// reusableQueries are the searches several workers propose with
// canReusePriorResult: one worker's saved result serves the others.
const reusableQueries = 6

func searchRequest(query string, estimate string, reusable bool) preflight.ToolCallRequest {
	req := preflight.ToolCallRequest{
		RunID:  "run-mp",
		StepID: "step",
		Tool: preflight.ToolCall{
			Provider:                 "search",
			Operation:                "web_search",
			Request:                  json.RawMessage(fmt.Sprintf(`{"query":%q}`, query)),
			EstimatedExternalCostUSD: json.Number(estimate),
		},
		Task:                &preflight.Task{GoalHash: "goal-mp"},
		FreshnessTTLSeconds: "3600",
	}
	if reusable {
		req.Capabilities = &preflight.Capabilities{CanReusePriorResult: true}
	}
	return req
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
	c := cfg.client()
	defer c.Close()
	st, err := New(c, cfg.Scope, &Options{Lease: cfg.Lease, SettleTimeout: 20 * time.Second, WaitReplicas: cfg.WaitReplicas})
	if err != nil {
		t.Fatal(err)
	}
	results, _ := NewResultStore(c, cfg.Scope, nil)
	g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: st, BudgetUSD: json.Number(cfg.BudgetUSD), Lease: cfg.Lease, NoCoalesce: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if cfg.Hang {
		p, rep, err := g.Begin(ctx, searchRequest("hang", "0.75", false))
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
				micro := 1 + rng.Int64N(500_000) // estimate: up to 0.5 USD in micro-dollars
				estimate := decimalText(micro, 6)
				cost := decimalText(rng.Int64N(micro*1000), 9) // below the estimate, in nano-dollars
				reusable := rng.IntN(8) == 0
				query := id
				if reusable {
					query = fmt.Sprintf("shared-%d", rng.IntN(reusableQueries))
				}
				req := searchRequest(query, estimate, reusable)
				req.StepID = id
				var permitted bool
				r, err := g.Call(ctx, req, func(ctx context.Context) (agent.Completion, error) {
					permitted = true
					if cfg.ProviderLog != "" {
						providerCharge(cfg.ProviderLog, id, cost)
					}
					time.Sleep(cfg.ToolDelay)
					res := agent.Completion{CostUSD: json.Number(cost)}
					if reusable {
						ref, err := results.Put(ctx, []byte(fmt.Sprintf("result of %s saved by worker %d call %s", query, cfg.Index, id)))
						if err != nil {
							return res, err
						}
						res.ResultReference = ref
					}
					return res, nil
				})
				mu.Lock()
				switch {
				case errors.Is(err, agent.ErrStoreUnavailable):
					rep.Unavailable++
				case r.Called:
					if err != nil {
						rep.Other = append(rep.Other, id+": "+err.Error())
					}
					if r.SettledUSD != "" {
						rep.Ran = append(rep.Ran, ranCall{ID: id, CostUSD: string(r.SettledUSD)})
					} else {
						rep.Other = append(rep.Other, id+": ran but not settled")
					}
				case err != nil:
					rep.Other = append(rep.Other, id+": "+err.Error())
				case r.ReuseReference != "":
					b, ok := results.Get(ctx, r.ReuseReference)
					switch {
					case !ok:
						rep.ReuseMissing++
					case !strings.HasPrefix(string(b), "result of "+query+" saved by worker "):
						rep.ReuseWrong++
					default:
						rep.Reused++
						if !strings.HasPrefix(string(b), fmt.Sprintf("result of %s saved by worker %d ", query, cfg.Index)) {
							rep.CrossReused++
						}
					}
				case r.InFlight != nil:
					rep.Coalesced++
				case r.OverBudget || r.Decision != nil && r.Decision.Verdict == preflight.VerdictDefer:
					rep.Deferred++
				default:
					rep.Other = append(rep.Other, fmt.Sprintf("%s: %s %v", id, r.Decision.Verdict, r.Decision.ReasonCodes))
				}
				if permitted && !r.Called {
					rep.RanUnplanned++
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

// providerCharge appends a provider's charge to the log at path, in one
// write (O_APPEND: lines of parallel writers never mix).
func providerCharge(path, id, cost string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.WriteString(id + " " + cost + "\n"); err != nil {
		panic(err)
	}
}

// startWorker re-executes the test binary as worker cfg.
func startWorker(t *testing.T, cfg workerConfig) *exec.Cmd {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorker$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	cmd.Stderr = os.Stderr // stdout (PASS lines) is dropped; the report is a file
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
