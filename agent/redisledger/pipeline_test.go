package redisledger

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// reservePipelines records the largest number of reservations a client
// sent in one pipeline, and how many pipelines with reservations it sent
// (go-redis sends the handshake of each new connection as a pipeline too).
type reservePipelines struct {
	mu        sync.Mutex
	largest   int
	pipelines int
}

func (h *reservePipelines) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *reservePipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *reservePipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := 0
		for _, c := range cmds {
			if a := c.Args(); len(a) > 1 && c.Name() == "fcall" && strings.HasSuffix(a[1].(string), "_reserve") {
				n++
			}
		}
		if n == 0 {
			return next(ctx, cmds)
		}
		h.mu.Lock()
		h.pipelines++
		h.largest = max(h.largest, n)
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// stallRedis makes the server of p busy for d (DEBUG SLEEP) from a
// connection of its own, and returns once the stall has begun; wait ends
// with it.
func stallRedis(t *testing.T, p *redisProc, d time.Duration) (wait func()) {
	t.Helper()
	done := make(chan error, 1)
	c := p.client(t)
	go func() {
		done <- c.Do(context.Background(), "DEBUG", "SLEEP", strconv.FormatFloat(d.Seconds(), 'f', 3, 64)).Err()
	}()
	time.Sleep(50 * time.Millisecond)
	return func() {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestPipelining: reservations that one Store's goroutines make while a
// call is in progress go to Redis together in one pipeline, and each gets
// its own outcome; with Options.NoPipelining each goes on its own. Also
// when the server has lost the store's library ("Function not found" in
// the pipeline's replies: each caller loads it again and retries).
func TestPipelining(t *testing.T) {
	for _, tt := range []struct {
		name          string
		off, flushLib bool
	}{
		{"pipelining", false, false},
		{"pipelining, library lost", false, true},
		{"NoPipelining", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startRedis(t, "--enable-debug-command", "yes")
			c := p.client(t)
			hook := new(reservePipelines)
			c.AddHook(hook)
			s, err := New(c, "pipe", &Options{NoPipelining: tt.off})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			ctx := context.Background()
			if tt.flushLib {
				if err := c.FunctionFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// While Redis sleeps, the first reservations (one per lane)
			// wait on it and the others arrive behind them.
			wait := stallRedis(t, p, 300*time.Millisecond)
			const n = 16
			var wg sync.WaitGroup
			var held atomic.Int64
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "r" + strconv.Itoa(i), AmountUSD: "0.01", LimitUSD: "0.125"})
					if err != nil {
						t.Error(err)
					}
					if ok {
						held.Add(1)
					}
				}()
			}
			wg.Wait()
			wait()
			st, err := s.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Each reservation is its own function call: 12 fit the limit,
			// every one was counted once.
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0.12", Calls: 12}, st.Balance); diff != "" || held.Load() != 12 {
				t.Errorf("16 reservations of 0.01 under a limit of 0.125: %d held; balance (-want +got):\n%s", held.Load(), diff)
			}
			hook.mu.Lock()
			largest, pipelines := hook.largest, hook.pipelines
			hook.mu.Unlock()
			if tt.off && pipelines > 0 {
				t.Errorf("with NoPipelining, %d pipelines of reservations were sent", pipelines)
			}
			// 14 arrive behind the first two within the 300 ms stall;
			// half of 16 is lenient for a machine that stalls this
			// process too.
			if !tt.off && largest < n/2 {
				t.Errorf("the largest pipeline held %d reservations of the %d made at once; want at least %d", largest, n, n/2)
			}
			t.Logf("%d pipelines, the largest with %d reservations", pipelines, largest)
		})
	}
}

// TestQueuedCallNotSent: a reservation queued behind calls in progress,
// whose caller's deadline passes before it could be sent, returns at its
// deadline and is never sent: Redis holds nothing for it and does not
// count it.
func TestQueuedCallNotSent(t *testing.T) {
	p := startRedis(t, "--enable-debug-command", "yes")
	s := newStore(t, p, "queued", nil)
	ctx := context.Background()
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "warm", AmountUSD: "0"}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	wait := stallRedis(t, p, 500*time.Millisecond)
	// Two reservations in progress take both lanes (maxLanes).
	first := make(chan error, maxLanes)
	for i := range maxLanes {
		go func() {
			_, _, err := s.Reserve(ctx, agent.Reservation{ID: "first" + strconv.Itoa(i), AmountUSD: "0.25", LimitUSD: "1"})
			first <- err
		}()
	}
	time.Sleep(50 * time.Millisecond) // they are in progress
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	ok, _, err := s.Reserve(short, agent.Reservation{ID: "queued", AmountUSD: "0.5", LimitUSD: "1"})
	took := time.Since(start)
	if ok || !errors.Is(err, errNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a reservation queued past its deadline: %v, %v; want not held, an error wrapping errNotSent and the deadline's", ok, err)
	}
	// Not a timing claim: the stall lasts 500 ms, the deadline 100 ms;
	// which of them ended the wait is what counts.
	if took > 400*time.Millisecond {
		t.Errorf("the queued reservation returned after %v: it waited for the stall, not its deadline", took.Round(time.Millisecond))
	}
	for range maxLanes {
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	}
	wait()
	st, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// warm and the two in progress counted; the queued one never reached
	// Redis.
	if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0.5", Calls: 3}, st.Balance); diff != "" {
		t.Errorf("after a queued reservation gave up (-want +got):\n%s", diff)
	}
}

// TestPipeliningCluster: on a Redis Cluster, reservations made at once go
// to the primary of the scope's slot as one pipeline (go-redis splits a
// Cluster pipeline by node; a scope is one key) and each is held once.
// The primary is stopped (SIGSTOP) for 300 ms, well under the cluster's
// node timeout, so that the calls arrive while the first two wait.
func TestPipeliningCluster(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("cluster run skipped in -short mode")
	}
	nodes := startCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs(nodes), MaxRedirects: 8, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	hook := new(reservePipelines)
	c.AddHook(hook)
	s, err := New(c, "cluster-pipe", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	// The client knows the slots and has its connection.
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "warm", AmountUSD: "0"}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	primary := primaryOf(nodes[0], nodes, s.keys[0])
	if primary == nil {
		t.Fatal("no primary for the scope's slot")
	}
	if err := primary.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = primary.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "r" + strconv.Itoa(i), AmountUSD: "0.01", LimitUSD: "1"}); !ok || err != nil {
				t.Error(ok, err)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	resume()
	wg.Wait()
	st, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0.16", Calls: 17}, st.Balance); diff != "" {
		t.Errorf("16 reservations of 0.01 at once (-want +got):\n%s", diff)
	}
	hook.mu.Lock()
	largest := hook.largest
	hook.mu.Unlock()
	if largest < n/2 {
		t.Errorf("the largest pipeline held %d reservations of the %d made at once; want at least %d", largest, n, n/2)
	}
	t.Logf("the largest pipeline held %d reservations", largest)
}

// TestFlusherSkipsCallsPastTheirDeadline: a queued call whose deadline has
// passed, or whose context was cancelled, by the time the flusher takes
// it is not sent, even in a pipeline
// with a call that still has time (whose deadline the pipeline keeps). The
// test puts the calls in the queue itself, as do would, to stand for the
// moment between the end of a caller's context and the caller's taking
// its call back, which the scheduler decides: without the check the call
// went to Redis for a caller that had given up.
func TestFlusherSkipsCallsPastTheirDeadline(t *testing.T) {
	p := startRedis(t)
	c := p.client(t)
	ctx := context.Background()
	b := &batcher{c: c, timeout: time.Second, lanes: 1}
	late := &pendingCall{args: []any{"set", "late", "1"}, ctx: ctx, deadline: time.Now().Add(-time.Millisecond), done: make(chan struct{})}
	cancelled, cancel := context.WithCancelCause(ctx)
	cancel(errors.New("the caller left"))
	left := &pendingCall{args: []any{"set", "left", "1"}, ctx: cancelled, deadline: time.Now().Add(5 * time.Second), done: make(chan struct{})}
	live := &pendingCall{args: []any{"set", "live", "1"}, ctx: ctx, deadline: time.Now().Add(5 * time.Second), done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, late, left, live)
	b.kick()
	b.mu.Unlock()
	for _, q := range []*pendingCall{late, left, live} {
		select {
		case <-q.done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%v: no answer", q.args)
		}
	}
	if err := live.cmd.Err(); err != nil {
		t.Errorf("the call with time left: %v", err)
	}
	if err := late.cmd.Err(); !errors.Is(err, errNotSent) {
		t.Errorf("the call past its deadline: %v, want an error wrapping errNotSent", err)
	}
	if err := left.cmd.Err(); !errors.Is(err, errNotSent) || context.Cause(cancelled) == nil || !errors.Is(err, context.Cause(cancelled)) {
		t.Errorf("the call whose context was cancelled: %v, want an error wrapping errNotSent and the context's cause", err)
	}
	if n, err := c.Exists(ctx, "late", "left").Result(); err != nil || n != 0 {
		t.Errorf("calls whose callers gave up reached Redis: EXISTS late left = %d, %v", n, err)
	}
}

// TestRingCallsStayOnTheScopesShard: a Ring (a UniversalClient New takes)
// sends each command to the shard of its first key. Every call of a
// store, whatever its function, must reach the shard of the scope's key:
// routed by the function's name instead, a reservation and its settlement
// would run on different shards, each with counters of its own. The
// scope is chosen so that its key and the function's name are on
// different shards.
func TestRingCallsStayOnTheScopesShard(t *testing.T) {
	a, b := startRedis(t), startRedis(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.addr(), "b": b.addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { ring.Close() })
	ctx := context.Background()
	// shardOf is the shard the Ring sends key to: where a SET of it lands.
	shardOf := func(key string) *redisProc {
		t.Helper()
		if err := ring.Set(ctx, key, "probe", 0).Err(); err != nil {
			t.Fatal(err)
		}
		defer ring.Del(ctx, key)
		for _, p := range []*redisProc{a, b} {
			if n, _ := p.client(t).Exists(ctx, key).Result(); n == 1 {
				return p
			}
		}
		t.Fatalf("%s is on no shard", key)
		return nil
	}
	_, _, names := library()
	byName := shardOf(names[reserveScript])
	scope := ""
	for i := range 64 {
		if sc := "ring-route-" + strconv.Itoa(i); shardOf("preflight:{"+sc+"}:s") != byName {
			scope = sc
			break
		}
	}
	if scope == "" {
		t.Fatal("no scope on another shard than the function's name")
	}
	// Both shards have the library, so that every call is a function call.
	for _, p := range []*redisProc{a, b} {
		if err := loadLibrary(ctx, p.client(t)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(ring, scope, &Options{AllowUnsafeServer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i := range 4 {
		id := "r" + strconv.Itoa(i)
		if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: "0.5", LimitUSD: "10"}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if _, err := s.Settle(ctx, id, "0.25", nil); err != nil {
			t.Fatal(err)
		}
	}
	if !s.functions.Load() {
		t.Fatal("the store fell back to scripts: the test is about function calls")
	}
	st, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.Balance{SpentUSD: "1", ReservedUSD: "0", Calls: 4}, st.Balance); diff != "" {
		t.Errorf("four calls reserved at 0.5 and settled at 0.25 (-want +got):\n%s", diff)
	}
	for _, p := range []*redisProc{a, b} {
		n, err := p.client(t).Exists(ctx, s.keys[0]).Result()
		if err != nil {
			t.Fatal(err)
		}
		if on := p == byName; (n == 1) == on {
			t.Errorf("the scope's key on the shard %s: %v, want %v (the shard the Ring sends the key to)", p.addr(), n == 1, !on)
		}
	}
}

// TestRingLoadsEveryShard: New loads the library on every shard of a
// Ring, so that a scope on any shard makes function calls. FUNCTION LOAD
// has no key, and a Ring sends it to a shard of its choice: loaded there
// only, the scopes of the other shard would fail their first call with
// "Function not found", and loading again could pick the wrong shard
// again.
func TestRingLoadsEveryShard(t *testing.T) {
	a, b := startRedis(t), startRedis(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.addr(), "b": b.addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { ring.Close() })
	ctx := context.Background()
	s, err := New(ring, "ring-load", &Options{AllowUnsafeServer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !s.functions.Load() {
		t.Fatal("New did not load the library")
	}
	name, _, _ := library()
	for _, p := range []*redisProc{a, b} {
		libs, err := p.client(t).FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: name}).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(libs) != 1 {
			t.Errorf("shard %s has %d libraries named %s, want 1", p.addr(), len(libs), name)
		}
	}
	// Scopes on both shards reserve and settle with function calls.
	for i := range 16 {
		sc, err := New(ring, "ring-load-"+strconv.Itoa(i), &Options{AllowUnsafeServer: true})
		if err != nil {
			t.Fatal(err)
		}
		if ok, _, err := sc.Reserve(ctx, agent.Reservation{ID: "r", AmountUSD: "0.5", LimitUSD: "10"}); !ok || err != nil {
			t.Errorf("scope %d: Reserve %v, %v", i, ok, err)
		}
		if _, err := sc.Settle(ctx, "r", "0.25", nil); err != nil {
			t.Errorf("scope %d: Settle: %v", i, err)
		}
		if !sc.functions.Load() {
			t.Errorf("scope %d fell back to scripts", i)
		}
		sc.Close()
	}
}
