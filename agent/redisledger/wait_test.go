package redisledger

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// startReplicated starts a primary and one replica of it, and returns
// once the replica is in sync.
func startReplicated(t testing.TB) (primary, replica *redisProc) {
	t.Helper()
	// The primary syncs a replica at once (by default it waits 5 s for
	// more of them).
	primary = startRedis(t, "--repl-diskless-sync-delay", "0")
	replica = startRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	awaitReplica(t, primary)
	return primary, replica
}

// awaitReplica returns once primary's replica acknowledges a write: WAIT
// after a write on the same connection (WAIT on a connection that wrote
// nothing counts every replica online, even one that has not applied
// anything yet).
func awaitReplica(t testing.TB, primary *redisProc) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: primary.addr(), PoolSize: 1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "replication-probe", "1", 0)
			p.Do(ctx, "wait", 1, 100)
			return nil
		})
		if err == nil && len(n) == 2 {
			if acks, _ := n[1].(*redis.Cmd).Int(); acks == 1 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never acknowledged a write: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPipelines records, for every pipeline a client sends that holds a
// call of the store, whether it ended with exactly one WAIT.
type waitPipelines struct {
	mu         sync.Mutex
	calls, bad int
}

func (h *waitPipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *waitPipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *waitPipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		calls, waits := 0, 0
		for _, c := range cmds {
			switch c.Name() {
			case "fcall", "eval":
				calls++
			case "wait":
				waits++
			}
		}
		if calls > 0 {
			h.mu.Lock()
			h.calls += calls
			if waits != 1 || cmds[len(cmds)-1].Name() != "wait" {
				h.bad++
			}
			h.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

// TestWaitReplicas: with Options.WaitReplicas every call of the store,
// alone or pipelined with others, is followed in its pipeline by one
// WAIT, and succeeds while the replica keeps up. With the replica stopped
// (SIGSTOP), a reservation fails closed with ErrNotReplicated within
// WaitTimeout and its hold is released on the primary; a settlement
// retries until SettleTimeout and fails with ErrNotReplicated, counted on
// the primary once; one that retries while the replica resumes succeeds,
// counted once; a Guard's call is not made.
func TestWaitReplicas(t *testing.T) {
	for _, noFunctions := range []bool{false, true} {
		t.Run("NoFunctions="+strconv.FormatBool(noFunctions), func(t *testing.T) {
			primary, replica := startReplicated(t)
			c := primary.client(t)
			hook := new(waitPipelines)
			c.AddHook(hook)
			const waitFor = 200 * time.Millisecond
			s, err := New(c, "waited", &Options{WaitReplicas: 1, WaitTimeout: waitFor, NoFunctions: noFunctions, SettleTimeout: 700 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			ctx := context.Background()
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := "r" + strconv.Itoa(i)
					if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: "0.01", LimitUSD: "1", Started: true}); !ok || err != nil {
						t.Error(ok, err)
						return
					}
					if _, err := s.Settle(ctx, id, "0.005", nil); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			hook.mu.Lock()
			calls, bad := hook.calls, hook.bad
			hook.mu.Unlock()
			if calls < 32 || bad > 0 {
				t.Errorf("%d calls sent in pipelines, %d pipelines without exactly one WAIT at their end; want at least 32 and 0", calls, bad)
			}

			if err := replica.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = replica.cmd.Process.Signal(syscall.SIGCONT) }()
			// A reservation the primary makes and the replica does not get.
			start := time.Now()
			ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "unreplicated", AmountUSD: "0.25", LimitUSD: "1", Started: true})
			took := time.Since(start)
			if ok || !errors.Is(err, ErrNotReplicated) {
				t.Errorf("Reserve with the replica stopped: %v, %v; want an error wrapping ErrNotReplicated", ok, err)
			}
			// Not a timing claim: what ended the wait must be WaitTimeout
			// (200 ms), not the store's 5 s Timeout.
			if took > 2*time.Second {
				t.Errorf("Reserve with the replica stopped returned after %v; WaitTimeout is %v", took.Round(time.Millisecond), waitFor)
			}
			// A settlement of a hold that was replicated.
			if ok, _, err := func() (bool, agent.Balance, error) {
				_ = replica.cmd.Process.Signal(syscall.SIGCONT)
				defer func() { _ = replica.cmd.Process.Signal(syscall.SIGSTOP) }()
				awaitReplica(t, primary) // caught up: its acknowledgement is not raced against WaitTimeout
				return s.Reserve(ctx, agent.Reservation{ID: "replicated", AmountUSD: "0.25", LimitUSD: "1", Started: true})
			}(); !ok || err != nil {
				t.Fatal(ok, err)
			}
			time.Sleep(50 * time.Millisecond) // stopped again
			start = time.Now()
			_, err = s.Settle(ctx, "replicated", "0.125", nil)
			took = time.Since(start)
			if !errors.Is(err, ErrNotReplicated) {
				t.Errorf("Settle with the replica stopped: %v; want an error wrapping ErrNotReplicated", err)
			}
			// Not a timing claim: it retried until SettleTimeout (700 ms),
			// not the store's 5 s Timeout.
			if took > 3*time.Second {
				t.Errorf("Settle with the replica stopped returned after %v; SettleTimeout is 700 ms", took.Round(time.Millisecond))
			}
			// A settlement retried while the replica resumes.
			if ok, _, err := func() (bool, agent.Balance, error) {
				_ = replica.cmd.Process.Signal(syscall.SIGCONT)
				defer func() { _ = replica.cmd.Process.Signal(syscall.SIGSTOP) }()
				awaitReplica(t, primary) // caught up: its acknowledgement is not raced against WaitTimeout
				return s.Reserve(ctx, agent.Reservation{ID: "resumed", AmountUSD: "0.25", LimitUSD: "1", Started: true})
			}(); !ok || err != nil {
				t.Fatal(ok, err)
			}
			time.Sleep(50 * time.Millisecond) // stopped again
			go func() {
				time.Sleep(300 * time.Millisecond)
				_ = replica.cmd.Process.Signal(syscall.SIGCONT)
			}()
			if set, err := s.Settle(ctx, "resumed", "0.0625", nil); err != nil || set.Duplicate || set.Late {
				t.Errorf("Settle retried while the replica resumed: %+v, %v; want counted once", set, err)
			}
			// The primary: the unreplicated hold released, both
			// settlements counted once.
			var st agent.LedgerState
			for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if st, err = newStore(t, primary, "waited", nil).State(ctx); err != nil {
					t.Fatal(err)
				}
				if st.Balance.ReservedUSD == "0" || time.Now().After(deadline) {
					break
				}
			}
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0.2675", ReservedUSD: "0", Calls: 19}, st.Balance); diff != "" {
				t.Errorf("on the primary (-want +got):\n%s", diff)
			}
			if err := replica.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			g, err := agent.NewGuard(nil, &agent.GuardOptions{Store: s, BudgetUSD: "10"})
			if err != nil {
				t.Fatal(err)
			}
			ran := false
			if _, err := g.Call(ctx, searchRequest("q", "0.01", false), func(context.Context) (agent.Completion, error) { ran = true; return agent.Completion{}, nil }); ran || !errors.Is(err, agent.ErrStoreUnavailable) {
				t.Errorf("Guard.Call with the replica stopped: ran %v, %v; want not run, ErrStoreUnavailable", ran, err)
			}
		})
	}
}

// TestWaitReplicasRefusesRing: a Ring sends a pipeline's commands to the
// shards of their first keys, and WAIT, which has none, to a shard of its
// choice, so WAIT would count the replicas of another shard than the one
// the call wrote: New refuses a Ring with Options.WaitReplicas, before it
// talks to any server.
func TestWaitReplicasRefusesRing(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2"}, ContextTimeoutEnabled: true})
	defer ring.Close()
	s, err := New(ring, "ring-wait", &Options{WaitReplicas: 1, AllowUnsafeServer: true, Timeout: 200 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("New took a Ring with WaitReplicas")
	}
	t.Log(err)
}
