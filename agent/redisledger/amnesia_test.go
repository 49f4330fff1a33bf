package redisledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/redis/go-redis/v9"
)

// The fault tests of this file make Redis forget: restarted without its
// data, restored from an older snapshot, evicting, or missing a part of a
// scope. Each asserts the promise of the package doc: the workers that had
// used the scope fail closed with agent.ErrStoreStateLost, no call runs
// after that, and no worker ever gets a fresh budget from a scope that
// was lost.

// heavy runs a long fault test only under CI=true or LEDGER_FAULTS=1,
// so that a plain go test stays short.
func heavy(t *testing.T) {
	t.Helper()
	if os.Getenv("CI") != "true" && os.Getenv("LEDGER_FAULTS") != "1" {
		t.Skip("long fault test: runs under CI=true or LEDGER_FAULTS=1")
	}
}

// TestUnsafeServerRefused: New refuses a Redis that keeps no append-only
// file or may evict keys, and a client that ignores deadlines, unless the
// caller opts out.
func TestUnsafeServerRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no AOF", []string{"--appendonly", "no"}, "appendonly"},
		{"volatile-lru", []string{"--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru"}, "volatile-lru"},
		{"allkeys-lru", []string{"--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"}, "allkeys-lru"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startRedis(t, tt.args...)
			_, err := New(p.client(t), "unsafe", nil)
			if !errors.Is(err, ErrUnsafeServer) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New on a server with %v: %v; want ErrUnsafeServer naming %s", tt.args, err, tt.want)
			}
			if _, err := New(p.client(t), "unsafe", &Options{AllowUnsafeServer: true}); err != nil {
				t.Errorf("New with AllowUnsafeServer: %v", err)
			}
		})
	}
	t.Run("safe", func(t *testing.T) {
		p := startRedis(t, "--maxmemory", "64mb", "--maxmemory-policy", "noeviction")
		if _, err := New(p.client(t), "safe", nil); err != nil {
			t.Errorf("New on a server with an AOF and noeviction: %v", err)
		}
		c := redis.NewClient(&redis.Options{Addr: p.addr()})
		defer c.Close()
		if _, err := New(c, "safe", nil); err == nil || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
			t.Errorf("New with a client without ContextTimeoutEnabled: %v; want refused", err)
		}
		ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": p.addr()}})
		defer ring.Close()
		if _, err := New(ring, "safe", nil); err == nil || !strings.Contains(err.Error(), "ContextTimeoutEnabled") {
			t.Errorf("New with a Ring without ContextTimeoutEnabled: %v; want refused", err)
		}
	})
}

// TestLostPart deletes each key of a scope in turn (a scope is one hash
// now; the sorted sets of layout 1 are gone). The next call of a worker
// that had used the scope fails with agent.ErrStoreStateLost, and so does
// every call after it, of that worker and of a new one: the scope is
// marked lost, never restarted from zero.
func TestLostPart(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	for i, name := range []string{"scope hash"} {
		t.Run(name, func(t *testing.T) {
			scope := "part-" + strconv.Itoa(i)
			s := newStore(t, p, scope, nil)
			if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "a", AmountUSD: "0.4", LimitUSD: "1", Started: true}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			if _, err := s.Settle(ctx, "a", "0.4", nil); err != nil {
				t.Fatal(err)
			}
			if err := p.client(t).Del(ctx, s.Keys()[i]).Err(); err != nil {
				t.Fatal(err)
			}
			ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "b", AmountUSD: "1", LimitUSD: "1", Started: true})
			if ok || !errors.Is(err, agent.ErrStoreStateLost) || !errors.Is(err, agent.ErrStoreUnavailable) {
				t.Errorf("Reserve after the %s was deleted: %v, %v; want refused with agent.ErrStoreStateLost", name, ok, err)
			}
			if _, err := s.StateOf(ctx, ""); !errors.Is(err, agent.ErrStoreStateLost) {
				t.Errorf("the same worker's next read: %v; want agent.ErrStoreStateLost", err)
			}
			if _, err := newStore(t, p, scope, nil).StateOf(ctx, ""); !errors.Is(err, agent.ErrStoreStateLost) {
				t.Errorf("a new worker on the scope: %v; want agent.ErrStoreStateLost", err)
			}
		})
	}
}

// TestDamagedCounters: a scope hash that lost its counters (field c) is
// lost, for this worker and a new one; a scope written by an older
// version of the package (money as decimal text, or layout 1: a hash and
// two sorted sets) is refused with an error saying so, never read as a
// fresh budget, and one of layout 1 whose hash vanished is lost.
func TestDamagedCounters(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	c := p.client(t)
	s := newStore(t, p, "damaged", nil)
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "a", AmountUSD: "0.4", LimitUSD: "1", Started: true}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := c.HDel(ctx, s.Keys()[0], "c").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "b", AmountUSD: "0.1", LimitUSD: "1", Started: true}); ok || !errors.Is(err, agent.ErrStoreStateLost) || !strings.Contains(err.Error(), "counters") {
		t.Errorf("Reserve after the counters were deleted: %v, %v; want agent.ErrStoreStateLost naming the counters", ok, err)
	}
	if _, err := newStore(t, p, "damaged", nil).StateOf(ctx, ""); !errors.Is(err, agent.ErrStoreStateLost) {
		t.Errorf("a new worker on the scope: %v; want agent.ErrStoreStateLost", err)
	}

	old := newStore(t, p, "old", nil)
	// The hash an older version left: money as decimal attodollars.
	if err := c.HSet(ctx, old.Keys()[0], "epoch", "e1", "ver", "7", "spent", "400000000000000000", "held", "0", "calls", "1", "seq", "0", "n", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range old.keys[1:] {
		if err := c.ZAdd(ctx, k, redis.Z{Score: math.Inf(1), Member: "!"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ok, st, err := old.ReserveOf(ctx, agent.Reservation{ID: "x", AmountUSD: "0.1", LimitUSD: "1", Started: true}, "")
	if ok || err == nil || !strings.Contains(err.Error(), "older version") {
		t.Errorf("Reserve on a scope of an older version: %v, %+v, %v; want refused, saying an older version wrote it", ok, st.Balance, err)
	}

	// Layout 1: counters in field m, leases and ended ids in two sorted
	// sets beside the hash.
	l1 := newStore(t, p, "layout1", nil)
	if err := c.HSet(ctx, l1.keys[0], "epoch", "e1", "m", "7 0 400000000000000 0 0 1 0 0 0").Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range l1.keys[1:] {
		if err := c.ZAdd(ctx, k, redis.Z{Score: math.Inf(1), Member: "!"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ok, st, err = l1.ReserveOf(ctx, agent.Reservation{ID: "x", AmountUSD: "0.1", LimitUSD: "1", Started: true}, "")
	if ok || err == nil || !strings.Contains(err.Error(), "older version") || !strings.Contains(err.Error(), "layout 1") {
		t.Errorf("Reserve on a scope of layout 1: %v, %+v, %v; want refused, saying layout 1 wrote it", ok, st.Balance, err)
	}
	if err := c.Del(ctx, l1.keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := newStore(t, p, "layout1", nil).StateOf(ctx, ""); !errors.Is(err, agent.ErrStoreStateLost) {
		t.Errorf("a scope of layout 1 without its hash: %v; want agent.ErrStoreStateLost", err)
	}
}

// amnesia runs a Guard's load on a scope, makes Redis forget with
// forget, and checks that the loss was reported and nothing ran after it.
// With markKept, the mark the loss leaves must also stop a worker that
// never saw the scope. It returns the load.
func amnesia(t *testing.T, p *redisProc, opts *Options, markKept bool, forget func()) *load {
	t.Helper()
	c := p.client(t)
	s, err := New(c, "amnesia", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g, _ := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "1000", NoCoalesce: true, StoreTimeout: time.Second})
	l := new(load)
	stop := make(chan struct{})
	wg := l.run(t, g, 8, stop)
	time.Sleep(time.Second)
	forget()
	deadline := time.Now().Add(15 * time.Second)
	for l.stateLost.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // calls go on failing closed
	close(stop)
	wg.Wait()
	if l.stateLost.Load() == 0 {
		t.Fatalf("Redis forgot %d acknowledged settlements and no call failed with agent.ErrStoreStateLost", len(l.ran))
	}
	if n := l.ranAfter.Load(); n > 0 {
		t.Errorf("%d tool calls ran after the loss was reported", n)
	}
	if !markKept {
		return l
	}
	// A worker that never saw the scope finds it marked lost, not fresh.
	fresh, err := New(p.client(t), "amnesia", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if ok, _, err := fresh.Reserve(context.Background(), agent.Reservation{ID: "fresh", AmountUSD: "1000", LimitUSD: "1000", Started: true}); ok || !errors.Is(err, agent.ErrStoreStateLost) {
		t.Errorf("a new worker after the loss reserved the whole budget: %v, %v; want agent.ErrStoreStateLost", ok, err)
	}
	t.Logf("%d calls settled before the loss, %d failed closed with state lost, first: %v", len(l.ran), l.stateLost.Load(), l.firstLost)
	return l
}

// TestRestartWithoutPersistence: redis-server without an AOF or snapshots
// is killed and started again, empty. Before, spending restarted from
// zero (+100 % of the budget). Now every call fails closed.
func TestRestartWithoutPersistence(t *testing.T) {
	heavy(t)
	p := startRedis(t, "--appendonly", "no")
	amnesia(t, p, &Options{AllowUnsafeServer: true, Lease: time.Second}, true, func() {
		p.kill()
		p.start()
	})
}

// TestRDBRollback: redis-server saves a snapshot, goes on acknowledging
// settlements, is killed, and starts again from the snapshot: the scope
// went back in time. Every call fails closed.
func TestRDBRollback(t *testing.T) {
	heavy(t)
	p := startRedis(t, "--appendonly", "no")
	amnesia(t, p, &Options{AllowUnsafeServer: true, Lease: time.Second}, true, func() {
		if err := p.client(t).Save(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // settlements the snapshot lacks
		p.kill()
		p.start()
	})
}

// TestEviction: Redis under maxmemory evicts while a filler writes; the
// scope's keys are evictable (IdleTTL gives them a TTL, for volatile-lru).
// The loss of any of them is reported; calls never run on a budget that
// restarted. maxmemory-samples 1 makes the victim a random evictable key,
// so the scope is hit within a few hundred evictions.
func TestEviction(t *testing.T) {
	heavy(t)
	for _, policy := range []string{"volatile-lru", "allkeys-lru"} {
		t.Run(policy, func(t *testing.T) {
			p := startRedis(t, "--maxmemory", "4mb", "--maxmemory-policy", policy, "--maxmemory-samples", "1")
			fill := p.client(t)
			// Under eviction the mark of the loss is itself a key Redis
			// may evict (IdleTTL gives it a TTL too, for volatile-lru), so
			// a worker that never saw the scope can find it fresh: that
			// is why New refuses a server that may evict
			// (AllowUnsafeServer lets this test in). The workers that
			// saw it must still fail closed.
			amnesia(t, p, &Options{AllowUnsafeServer: true, Lease: time.Second, IdleTTL: time.Hour}, false, func() {
				blob := strings.Repeat("x", 16<<10)
				for i := 0; i < 5000; i++ {
					if err := fill.Set(context.Background(), "filler:"+strconv.Itoa(i), blob, time.Hour).Err(); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
}

// TestStoppedWorkerPastLease: a worker process holds 0.75 of a budget of 1
// for a call that started, and is stopped (SIGSTOP) for longer than its
// lease. Before, the lease gave the 0.75 back and another worker spent it
// while the call could still reach its provider. Now the expiry charges
// it: another worker's 0.5 does not fit, and the budget is never passed.
func TestStoppedWorkerPastLease(t *testing.T) {
	p := startRedis(t)
	out := filepath.Join(t.TempDir(), "reserved")
	const lease = time.Second
	cmd := startWorker(t, workerConfig{Addrs: []string{p.addr()}, Scope: "stopped", BudgetUSD: "1", Lease: lease, Hang: true, Out: out})
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker never reserved")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lease + lease/2)
	s := newStore(t, p, "stopped", nil)
	ctx := context.Background()
	ok, b, err := s.Reserve(ctx, agent.Reservation{ID: "other", AmountUSD: "0.5", LimitUSD: "1", Started: true})
	if ok || err != nil {
		t.Errorf("0.5 reserved while a stopped worker's started 0.75 call may still run: %v, %+v, %v", ok, b, err)
	}
	if b.SpentUSD != "0.75" || b.ReservedUSD != "0" {
		t.Errorf("after the stopped worker's lease: %+v, want its 0.75 charged", b)
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
}

// TestKilledWorkersCallsStayCounted: four worker processes spend one
// budget with calls that take 50 ms; one is killed with SIGKILL while its
// calls run. Every call writes what its provider charged before it
// settles. The providers' total never passes the budget (the killed
// worker's started calls stay charged when their leases expire, never
// re-spent), and Redis never counts less than the providers charged.
func TestKilledWorkersCallsStayCounted(t *testing.T) {
	heavy(t)
	p := startRedis(t)
	const budget = "200"
	dir := t.TempDir()
	log := filepath.Join(dir, "provider.log")
	var cmds []*workerProc
	for i := range 4 {
		cfg := workerConfig{Index: i, Addrs: []string{p.addr()}, Scope: "killed", BudgetUSD: budget, Goroutines: 16, Calls: 60, Lease: time.Second, ToolDelay: 50 * time.Millisecond, ProviderLog: log, Out: filepath.Join(dir, fmt.Sprintf("w%d.json", i))}
		cmds = append(cmds, &workerProc{cfg: cfg, cmd: startWorker(t, cfg)})
	}
	// Kill worker 0 once the fleet is well under way, its calls running.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(log); strings.Count(string(b), "w0-") >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker 0 never ran 100 calls")
		}
	}
	_ = cmds[0].cmd.Process.Kill()
	_ = cmds[0].cmd.Wait()
	var acked []ranCall
	for _, w := range cmds[1:] {
		if err := w.cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", w.cfg.Index, err)
		}
		acked = append(acked, readReport(t, w.cfg.Out).Ran...)
	}
	time.Sleep(1500 * time.Millisecond) // the killed worker's leases expire
	charged := providerTotal(t, log)
	limit, _ := new(big.Rat).SetString(budget)
	st, err := newStore(t, p, "killed", nil).State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	spent, _ := new(big.Rat).SetString(string(st.Balance.SpentUSD))
	t.Logf("providers charged %s for %d calls (%d acknowledged by the live workers); Redis counts %s spent, %s held", charged.FloatString(9), providerCalls(t, log), len(acked), st.Balance.SpentUSD, st.Balance.ReservedUSD)
	if charged.Cmp(limit) > 0 {
		t.Errorf("OVERSHOOT: the providers charged %s > budget %s", charged.FloatString(9), budget)
	}
	if spent.Cmp(charged) < 0 {
		t.Errorf("Redis counts %s spent, less than the %s the providers charged", st.Balance.SpentUSD, charged.FloatString(9))
	}
	if st.Balance.ReservedUSD != "0" {
		t.Errorf("%s still held after every lease", st.Balance.ReservedUSD)
	}
	if sumUSD(t, acked).Cmp(spent) > 0 {
		t.Errorf("the live workers' acknowledged settlements (%s) exceed what Redis counts (%s)", sumUSD(t, acked).FloatString(9), st.Balance.SpentUSD)
	}
}

type workerProc struct {
	cfg workerConfig
	cmd *exec.Cmd
}

func providerLines(t *testing.T, path string) [][2]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, cost, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("provider log line %q", sc.Text())
		}
		out = append(out, [2]string{id, cost})
	}
	return out
}

func providerTotal(t *testing.T, path string) *big.Rat {
	total := new(big.Rat)
	for _, l := range providerLines(t, path) {
		r, ok := new(big.Rat).SetString(l[1])
		if !ok {
			t.Fatalf("cost %q", l[1])
		}
		total.Add(total, r)
	}
	return total
}

func providerCalls(t *testing.T, path string) int { return len(providerLines(t, path)) }

// TestStalledRedis stalls Redis (SIGSTOP of redis-server, CLIENT PAUSE)
// and requires a call to fail closed within its deadline, or, without
// one, within GuardOptions.StoreTimeout, a few tens of ms over at most.
func TestStalledRedis(t *testing.T) {
	heavy(t)
	for _, stall := range []string{"SIGSTOP", "CLIENT PAUSE"} {
		for _, deadline := range []time.Duration{300 * time.Millisecond, 0} {
			t.Run(fmt.Sprintf("%s deadline %v", stall, deadline), func(t *testing.T) {
				p := startRedis(t)
				s := newStore(t, p, "stall", nil)
				const storeTimeout = 400 * time.Millisecond
				g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "1", StoreTimeout: storeTimeout})
				if err != nil {
					t.Fatal(err)
				}
				mustCall := func(q string) {
					if _, err := g.Call(context.Background(), searchRequest(q, "0.01", false), func(context.Context) (agent.Completion, error) { return agent.Completion{}, nil }); err != nil {
						t.Fatal(err)
					}
				}
				mustCall("warm") // scripts loaded, connection open
				switch stall {
				case "SIGSTOP":
					if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
						t.Fatal(err)
					}
					defer func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }()
				default:
					if err := p.client(t).Do(context.Background(), "CLIENT", "PAUSE", "3000", "ALL").Err(); err != nil {
						t.Fatal(err)
					}
				}
				ctx := context.Background()
				bound := storeTimeout
				if deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, deadline)
					defer cancel()
					bound = deadline
				}
				ran := false
				stalledCall := func(ctx context.Context) time.Duration {
					start := time.Now()
					_, err := g.Call(ctx, searchRequest("stalled", "0.01", false), func(context.Context) (agent.Completion, error) { ran = true; return agent.Completion{}, nil })
					if ran || !errors.Is(err, agent.ErrStoreUnavailable) {
						t.Errorf("on a stalled Redis: ran %v, error %v; want not run, agent.ErrStoreUnavailable", ran, err)
					}
					return time.Since(start)
				}
				took := stalledCall(ctx)
				if took > bound+100*time.Millisecond {
					// A machine busy with other tests can stall this
					// process for a moment; a call that overruns its
					// bound overruns it every time, so a second call,
					// under the same stall and a bound of its own, decides.
					t.Logf("the call returned %v after it began, bound %v; once more", took.Round(time.Millisecond), bound)
					ctx := context.Background()
					if deadline > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, deadline)
						defer cancel()
					}
					took = stalledCall(ctx)
				}
				if took > bound+100*time.Millisecond {
					t.Errorf("the call returned %v after it began, bound %v: more than 100 ms over", took.Round(time.Millisecond), bound)
				}
				t.Logf("failed closed after %v (bound %v)", took.Round(time.Millisecond), bound)
			})
		}
	}
}

// droppingConn loses the reply of the write drop() arms: the command
// reaches Redis and runs, then the connection reads EOF, as when it
// breaks after the request went out.
type droppingConn struct {
	net.Conn
	drop    func() bool
	dropped bool
}

func dialDropping(ctx context.Context, network, addr string, drop func() bool) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &droppingConn{Conn: c, drop: drop}, nil
}

func (c *droppingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err == nil && c.drop() {
		time.Sleep(50 * time.Millisecond) // Redis runs it
		c.dropped = true
	}
	return n, err
}

func (c *droppingConn) Read(b []byte) (int, error) {
	if c.dropped {
		_ = c.Conn.Close()
		return 0, io.EOF
	}
	return c.Conn.Read(b)
}

// TestClientRetries: go-redis retries a command whose connection broke
// after it was sent (MaxRetries). A Reserve or a Settle whose first copy
// ran is then run twice. The second Reserve holds nothing more; the
// second Settle counts nothing more and is not reported as a duplicate;
// nothing is left held.
func TestClientRetries(t *testing.T) {
	p := startRedis(t)
	var armed sync.Mutex
	var drop bool
	c := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: []string{p.addr()}, MaxRetries: 3, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialDropping(ctx, network, addr, func() bool {
				armed.Lock()
				defer armed.Unlock()
				d := drop
				drop = false
				return d
			})
		},
	})
	t.Cleanup(func() { c.Close() })
	s, err := New(c, "retries", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	// Load the scripts: the armed write must be the script's own run.
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "warm", AmountUSD: "0", Started: true}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := s.Settle(ctx, "warm", "0", nil); err != nil {
		t.Fatal(err)
	}
	arm := func() { armed.Lock(); drop = true; armed.Unlock() }
	arm()
	ok, b, err := s.Reserve(ctx, agent.Reservation{ID: "r", AmountUSD: "0.6", LimitUSD: "1", Started: true})
	if !ok || err != nil || b.ReservedUSD != "0.6" || b.Calls != 2 {
		t.Errorf("a Reserve retried by the client: %v, %+v, %v; want held once (0.6, its call the second)", ok, b, err)
	}
	arm()
	set, err := s.Settle(ctx, "r", "0.5", nil)
	if err != nil || set.Duplicate || set.Late || set.Balance.SpentUSD != "0.5" || set.Balance.ReservedUSD != "0" {
		t.Errorf("a Settle retried by the client: %+v, %v; want counted once, neither Duplicate nor Late", set, err)
	}
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "s", AmountUSD: "0.5", LimitUSD: "1", Started: true}); !ok || err != nil {
		t.Errorf("0.5 of the 0.5 left: %v, %v; want held (nothing orphaned)", ok, err)
	}
}
