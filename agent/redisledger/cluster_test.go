package redisledger

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/redis/go-redis/v9"
)

// startCluster starts six redis-servers (three primaries, three replicas)
// and joins them with redis-cli --cluster create.
func startCluster(t *testing.T) []*redisProc {
	t.Helper()
	var nodes []*redisProc
	var addrs []string
	for range 6 {
		p := startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000", "--appendonly", "yes",
			// Replicas sync at once (the default waits 5 s for more of them)
			// and may take over however long their link was down.
			"--repl-diskless-sync-delay", "0", "--cluster-replica-validity-factor", "0")
		nodes = append(nodes, p)
		addrs = append(addrs, p.addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(redisCLIPath, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range nodes {
		for {
			out, _ := exec.Command(redisCLIPath, "-p", strconv.Itoa(p.port), "cluster", "info").Output()
			repl, _ := exec.Command(redisCLIPath, "-p", strconv.Itoa(p.port), "info", "replication").Output()
			synced := strings.Contains(string(repl), "role:master") || strings.Contains(string(repl), "master_link_status:up")
			if strings.Contains(string(out), "cluster_state:ok") && synced {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not ok on %s: %s\n%s", p.addr(), out, repl)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nodes
}

func clusterAddrs(nodes []*redisProc) []string {
	var a []string
	for _, p := range nodes {
		a = append(a, p.addr())
	}
	return a
}

// primaryOf returns the node serving the slot of key as primary, as the
// live node ask sees it; nil when it cannot tell.
func primaryOf(ask *redisProc, nodes []*redisProc, key string) *redisProc {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: ask.addr()})
	defer c.Close()
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return nil
	}
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return nil
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) {
			for _, p := range nodes {
				if p.addr() == s.Nodes[0].Addr {
					return p
				}
			}
		}
	}
	return nil
}

// TestCluster runs the multi-process test against a Redis Cluster of three
// primaries with a replica each, and kills (SIGKILL) the primary of the
// scope's slot during the run: its replica takes over. Replication is
// asynchronous, so settlements the old primary acknowledged but had not
// yet sent to its replica are lost; the test measures them and requires
// that none is counted twice and the budget is never exceeded.
func TestCluster(t *testing.T) {
	const scope, budget = "cluster-run", "500.000000000000000001"
	nodes, addrs, c, s := clusterScope(t, scope)
	f := runFleetLease(t, addrs, true, scope, budget, 4, 16, 160, 2*time.Second, func() {
		waitSpent(t, s, budget, 30)
		failOver(t, nodes, s.keys[0])
	})
	time.Sleep(2500 * time.Millisecond) // holds whose reply was lost expire
	f.check(t, c, scope, budget, failoverAsync)
	if f.CrossReused == 0 {
		t.Error("no result saved by one process was reused by another")
	}
	t.Logf("%d calls failed closed during the failover", f.Unavailable)
}

// clusterScope skips the test in -short mode; otherwise it starts a
// Cluster and opens scope on it: the nodes, their addresses, a client
// and the store.
func clusterScope(t *testing.T, scope string) ([]*redisProc, []string, *redis.ClusterClient, *Store) {
	t.Helper()
	needRedis(t)
	if testing.Short() {
		t.Skip("cluster run skipped in -short mode")
	}
	nodes := startCluster(t)
	addrs := clusterAddrs(nodes)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 8, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	s, err := New(c, scope, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return nodes, addrs, c, s
}

// failOver kills (SIGKILL) the primary of key's slot and waits, at most
// 30 s, until a replica is the slot's primary. It returns the old primary,
// the new one and when the kill was; the new one is nil, after t.Error,
// when no replica took over.
func failOver(t *testing.T, nodes []*redisProc, key string) (victim, promoted *redisProc, killedAt time.Time) {
	t.Helper()
	victim = primaryOf(nodes[0], nodes, key)
	if victim == nil {
		t.Fatal("no primary for the scope's slot")
	}
	live := nodes[(indexOf(nodes, victim)+1)%len(nodes)]
	victim.kill()
	killedAt = time.Now()
	for {
		out, _ := exec.Command(redisCLIPath, "-p", strconv.Itoa(live.port), "cluster", "info").Output()
		if strings.Contains(string(out), "cluster_state:ok") {
			if p := primaryOf(live, nodes, key); p != nil && p != victim {
				t.Logf("primary %s killed; replica %s took over after %v", victim.addr(), p.addr(), time.Since(killedAt).Round(time.Millisecond))
				return victim, p, killedAt
			}
		}
		if time.Since(killedAt) > 30*time.Second {
			t.Error("no replica took over")
			return victim, nil, killedAt
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func indexOf(nodes []*redisProc, p *redisProc) int {
	for i, n := range nodes {
		if n == p {
			return i
		}
	}
	return -1
}

// TestClusterWaitReplicas is TestCluster with Options.WaitReplicas 1: the
// scope's primary is killed mid-run, its replica takes over, and the old
// primary is started again and rejoins as the new primary's replica
// (until then no call can be acknowledged: they fail closed). Every hold
// and settlement a worker was told of had reached the replica: none is
// lost, spending stays within the budget with no allowance, and the
// scope is never found lost (TestCluster allows the holds and
// settlements of the calls in flight at the failover).
func TestClusterWaitReplicas(t *testing.T) {
	const scope, budget = "cluster-wait", "500.000000000000000001"
	nodes, addrs, c, s := clusterScope(t, scope)
	f := runFleetLease(t, addrs, true, scope, budget, 4, 16, 160, 2*time.Second, func() {
		waitSpent(t, s, budget, 30)
		victim, promoted, killedAt := failOver(t, nodes, s.keys[0])
		if promoted == nil {
			return
		}
		victim.start()
		for {
			out, _ := exec.Command(redisCLIPath, "-p", strconv.Itoa(promoted.port), "info", "replication").Output()
			if strings.Contains(string(out), "state=online") {
				t.Logf("the old primary rejoined as a replica %v after the kill", time.Since(killedAt).Round(time.Millisecond))
				return
			}
			if time.Since(killedAt) > 30*time.Second {
				t.Error("the old primary did not rejoin as a replica")
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}, func(cfg *workerConfig) { cfg.WaitReplicas = 1 })
	time.Sleep(2500 * time.Millisecond) // holds whose reply was lost expire
	f.check(t, c, scope, budget, failoverWaited)
	t.Logf("%d calls failed closed during the failover", f.Unavailable)
}

// TestClusterCallsGoToTheScopesPrimary: every function call goes straight
// to the primary of the scope's slot, lone or pipelined. go-redis routes
// a command by its first key; for FCALL it knows that position only when
// the command is told (as FCall tells it), and otherwise routes by the
// function's name, whose slot's primary answers MOVED and sends the call
// on: two round trips and a reload of the client's slot map per call.
// The scope is chosen so that the two primaries differ.
func TestClusterCallsGoToTheScopesPrimary(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("cluster run skipped in -short mode")
	}
	nodes := startCluster(t)
	_, _, names := library()
	byName := primaryOf(nodes[0], nodes, names[reserveScript])
	if byName == nil {
		t.Fatal("no primary for the slot of the function's name")
	}
	scope := ""
	for i := range 64 {
		sc := "route-" + strconv.Itoa(i)
		if p := primaryOf(nodes[0], nodes, "preflight:{"+sc+"}:s"); p != nil && p != byName {
			scope = sc
			break
		}
	}
	if scope == "" {
		t.Fatal("no scope whose primary differs from the function name's")
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs(nodes), MaxRedirects: 8, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	s, err := New(c, scope, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !s.functions.Load() {
		t.Fatal("the store did not load its library: the test is about function calls")
	}
	ctx := context.Background()
	for _, p := range nodes {
		if err := exec.Command(redisCLIPath, "-p", strconv.Itoa(p.port), "config", "resetstat").Run(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "r" + strconv.Itoa(i), AmountUSD: "0.01", LimitUSD: "1"}); !ok || err != nil {
				t.Error(ok, err)
			}
		}()
	}
	wg.Wait()
	for _, p := range nodes {
		out, err := exec.Command(redisCLIPath, "-p", strconv.Itoa(p.port), "info", "errorstats").Output()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "errorstat_MOVED") {
			t.Errorf("node %s redirected calls (MOVED): they were not sent to the scope's primary\n%s", p.addr(), out)
		}
	}
}
