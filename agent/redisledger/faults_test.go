package redisledger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/redis/go-redis/v9"
)

// TestKilledWorkerLeaseExpires: a worker process reserves 0.75 USD, then
// is killed with SIGKILL mid-call; its lease (1 s) expires and, since the
// call had started, the 0.75 is charged: never free for another call.
func TestKilledWorkerLeaseExpires(t *testing.T) {
	p := startRedis(t)
	out := filepath.Join(t.TempDir(), "reserved")
	const lease = time.Second
	cmd := startWorker(t, workerConfig{Addrs: []string{p.addr()}, Scope: "kill", BudgetUSD: "1", Lease: lease, Hang: true, Out: out})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker never reserved")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := newStore(t, p, "kill", nil)
	ctx := context.Background()
	if st, _ := s.State(ctx); st.Balance.ReservedUSD != "0.75" {
		t.Fatalf("before the kill: %+v", st.Balance)
	}
	_ = cmd.Process.Kill() // SIGKILL
	_ = cmd.Wait()
	killed := time.Now()
	for {
		st, err := s.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Balance.ReservedUSD == "0" {
			t.Logf("hold charged %v after kill -9 (lease %v, renewed every %v)", time.Since(killed).Round(time.Millisecond), lease, lease/3)
			if st.Balance.SpentUSD != "0.75" || st.Balance.Calls != 1 {
				t.Errorf("after expiry: %+v, want the started call's 0.75 spent and one call counted", st.Balance)
			}
			return
		}
		if time.Since(killed) > lease+5*time.Second {
			t.Fatalf("money still held %v after the kill: %+v", time.Since(killed), st.Balance)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// load runs goroutines that spend through one Guard on s until stop is
// closed, and counts what happened.
type load struct {
	mu          sync.Mutex
	ran         []ranCall // acknowledged settlements
	funcRuns    atomic.Int64
	failedClose atomic.Int64
	stateLost   atomic.Int64 // calls refused with agent.ErrStoreStateLost
	ranAfter    atomic.Int64 // tool calls begun after the first of those
	deferred    atomic.Int64
	other       []string
	firstErr    error
	firstLost   error
}

func (l *load) run(t *testing.T, g *agent.Guard, goroutines int, stop <-chan struct{}) *sync.WaitGroup {
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
				req := searchRequest(id, "0.01", false)
				req.StepID = id
				r, err := g.Call(context.Background(), req, func(context.Context) (agent.Completion, error) {
					l.funcRuns.Add(1)
					if l.stateLost.Load() > 0 {
						l.ranAfter.Add(1)
					}
					time.Sleep(time.Millisecond) // the tool call
					return agent.Completion{CostUSD: "0.004"}, nil
				})
				l.mu.Lock()
				switch {
				case errors.Is(err, agent.ErrStoreUnavailable):
					l.failedClose.Add(1)
					if errors.Is(err, agent.ErrStoreStateLost) {
						l.stateLost.Add(1)
						if l.firstLost == nil {
							l.firstLost = err
						}
					}
					if l.firstErr == nil {
						l.firstErr = err
					}
					time.Sleep(5 * time.Millisecond)
				case r.Called && r.SettledUSD != "":
					l.ran = append(l.ran, ranCall{ID: id, CostUSD: string(r.SettledUSD)})
				case r.OverBudget || r.Decision != nil && !r.Called:
					l.deferred.Add(1)
				default:
					l.other = append(l.other, fmt.Sprintf("%s: %+v %v", id, r, err))
				}
				l.mu.Unlock()
			}
		}()
	}
	return &wg
}

// TestRedisRestartWithAOF kills redis-server (SIGKILL) under load and
// starts it again on the same append-only file. While it is down the Guard
// fails closed: no call runs without a reservation. Settlements retried
// across the restart count once. With appendfsync always no acknowledged
// settlement is lost and calls go on. With everysec a crash can lose the
// writes of the last second (Redis acknowledges them before writing them
// while a background fsync is slow); then the workers, whose watermark is
// past the version Redis came back with, must fail closed with
// agent.ErrStoreStateLost, and no call may run after that.
func TestRedisRestartWithAOF(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) {
			p := startRedis(t, "--appendonly", "yes", "--appendfsync", fsync)
			c := p.client(t)
			s, err := New(c, "restart", &Options{Lease: time.Second, SettleTimeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const budget = "1000"
			g, _ := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: budget, NoCoalesce: true})
			var l load
			stop := make(chan struct{})
			wg := l.run(t, g, 8, stop)
			time.Sleep(1500 * time.Millisecond)
			p.kill()
			down := time.Now()
			// A call begun while Redis is down fails closed. (The load's
			// workers may all be in their tool or retrying a Settle when
			// the server dies, and then begin nothing until it is back.)
			req := searchRequest("while-down", "0.01", false)
			req.StepID = "while-down"
			r, err := g.Call(context.Background(), req, func(context.Context) (agent.Completion, error) {
				t.Error("a call ran while Redis was down")
				return agent.Completion{}, nil
			})
			if !errors.Is(err, agent.ErrStoreUnavailable) || r.Called {
				t.Errorf("a call while Redis was down: called %v, %v; want it refused with agent.ErrStoreUnavailable", r.Called, err)
			}
			time.Sleep(time.Second - time.Since(down))
			p.start()
			restarted := time.Now()
			// Wait until a call succeeds again, or the loss is detected.
			for ok := false; !ok; {
				l.mu.Lock()
				n := len(l.ran)
				l.mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				l.mu.Lock()
				ok = len(l.ran) > n || l.stateLost.Load() > 0
				l.mu.Unlock()
				if time.Since(restarted) > 20*time.Second {
					t.Fatal("no call succeeded after the restart, and no loss was reported")
				}
			}
			recovered := time.Since(restarted)
			time.Sleep(500 * time.Millisecond)
			close(stop)
			wg.Wait()
			time.Sleep(1500 * time.Millisecond) // orphaned holds (replies lost in the crash) expire

			if int64(len(l.ran)) > l.funcRuns.Load() {
				t.Errorf("%d tool calls ran, %d were settled", l.funcRuns.Load(), len(l.ran))
			}
			ctx := context.Background()
			spent, settled := rawMoney(t, c, s)
			acked := sumUSD(t, l.ran)
			lostCalls := len(l.ran) - settled
			lostUSD := new(big.Rat).Sub(acked, spent)
			detected := l.stateLost.Load() > 0
			t.Logf("appendfsync %s: down %v, then %v until calls succeed or the loss is reported; %d calls settled and acknowledged, %d failed closed (%d state lost), %d deferred; lost on restart: %d settlements, %s USD",
				fsync, restarted.Sub(down).Round(time.Millisecond), recovered.Round(time.Millisecond), len(l.ran), l.failedClose.Load(), l.stateLost.Load(), l.deferred.Load(), lostCalls, lostUSD.FloatString(3))
			// A reservation whose reply the crash lost never ran; its hold,
			// started, is charged at its 0.01 when its lease expires:
			// counted, never spent twice, at most once per call that
			// failed closed.
			charged := new(big.Rat).Neg(lostUSD)
			if limit := new(big.Rat).SetFrac64(l.failedClose.Load(), 100); !detected && charged.Cmp(limit) > 0 {
				t.Errorf("Redis counts %s USD more than the acknowledged settlements, above the %s of the calls that failed closed", charged.FloatString(3), limit.FloatString(3))
			}
			switch {
			case fsync == "always" && (lostCalls != 0 || lostUSD.Sign() > 0 || detected):
				t.Errorf("appendfsync always: %d acknowledged settlements (%s USD) lost, loss reported %v; want none", lostCalls, lostUSD.FloatString(3), detected)
			case lostCalls > 0 && !detected:
				t.Errorf("%d acknowledged settlements (%s USD) lost and no worker failed closed with agent.ErrStoreStateLost", lostCalls, lostUSD.FloatString(3))
			case lostCalls < 0:
				t.Errorf("Redis holds %d more settlements than the workers acknowledged", -lostCalls)
			}
			if n := l.ranAfter.Load(); n > 0 {
				t.Errorf("%d tool calls ran after the loss was reported", n)
			}
			if !detected {
				st, err := s.State(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if st.Balance.ReservedUSD != "0" {
					t.Errorf("%s USD still held after the leases", st.Balance.ReservedUSD)
				}
			}
			if len(l.other) > 0 {
				t.Errorf("%d unexpected outcomes, first %s", len(l.other), l.other[0])
			}
		})
	}
}

// rawMoney reads the scope's spending and its count of settlements
// straight from Redis, past the scripts (which refuse a lost scope).
func rawMoney(t *testing.T, c redis.UniversalClient, s *Store) (*big.Rat, int) {
	t.Helper()
	h, err := c.HGetAll(context.Background(), s.keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	spent := new(big.Rat)
	if m := h["c"]; len(m) == 104 {
		limb := func(i int) string {
			return strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64([]byte(m[8*i:]))), 'f', 0, 64)
		}
		usd, err := fromLimbs(limb(1), limb(2))
		if err != nil {
			t.Fatal(err)
		}
		spent.SetString(string(usd))
	}
	n := 0
	for k, v := range h {
		if strings.HasPrefix(k, "r:") && (strings.HasPrefix(v, "0 ") || strings.HasPrefix(v, "1 ")) {
			n++
		}
	}
	return spent, n
}

// delayProxy forwards TCP to upstream, holding each chunk for delay in
// each direction: a slow network or an overloaded Redis.
func delayProxy(t *testing.T, upstream string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	pipe := func(dst, src net.Conn) {
		defer dst.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				time.Sleep(delay)
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					_ = src.Close()
				}
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
	return ln.Addr().String()
}

// TestSlowRedis runs the multi-process test through a proxy that adds
// 2 ms each way to every exchange with Redis.
func TestSlowRedis(t *testing.T) {
	p := startRedis(t)
	if testing.Short() {
		t.Skip("multi-process run skipped in -short mode")
	}
	proxy := delayProxy(t, p.addr(), 2*time.Millisecond)
	const budget = "80.5"
	f := runFleet(t, []string{proxy}, false, "slow", budget, 4, 16, 40, nil)
	f.check(t, p.client(t), "slow", budget, noFailover)
	if f.Unavailable > 0 {
		t.Logf("%d calls failed closed on timeouts", f.Unavailable)
	}
}
