package sharedstate

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/server/internal/testpart"
	"github.com/redis/go-redis/v9"
)

// openStore starts the store kind names and opens it.
func openStore(t *testing.T, kind string) *Store {
	t.Helper()
	var raw string
	switch kind {
	case "redis":
		raw = "redis://" + testpart.StartRedis(t, "--appendonly", "yes")
	case "redis cluster":
		addrs := testpart.StartRedisCluster(t, "--appendonly", "yes")
		raw = "redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
	case "postgres":
		raw = testpart.StartPostgres(t)
	}
	s, err := Open(context.Background(), raw, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestParkTake: a call parked under a key is taken once, by one taker;
// the scope's other state and other scopes never see it; it lapses after
// its TTL.
func TestParkTake(t *testing.T) {
	for _, kind := range []string{"redis", "redis cluster", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, kind)
			a, err := s.Scope("alice", "run:1")
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			other, err := s.Scope("bob", "run:1")
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if err := a.Claims.Park(ctx, "cont:k1", []byte(`{"call":1}`), time.Minute); err != nil {
				t.Fatal(err)
			}
			if b, err := other.Claims.Take(ctx, "cont:k1"); err != nil || b != nil {
				t.Fatalf("another scope took %q (%v)", b, err)
			}
			if c, err := a.Claims.Claim(ctx, "k1", time.Minute); err != nil || c.Token == "" {
				t.Fatalf("a claim of a digest beside a parked call: %+v %v", c, err)
			}
			b, err := a.Claims.Take(ctx, "cont:k1")
			if err != nil || string(b) != `{"call":1}` {
				t.Fatalf("Take: %q %v", b, err)
			}
			if b, err := a.Claims.Take(ctx, "cont:k1"); err != nil || b != nil {
				t.Fatalf("taken twice: %q %v", b, err)
			}
			if err := a.Claims.Park(ctx, "cont:k2", []byte("x"), 50*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			if b, err := a.Claims.Take(ctx, "cont:k2"); err != nil || b != nil {
				t.Fatalf("taken after its TTL: %q %v", b, err)
			}
		})
	}
}

// TestClusterScopeOneSlot: on a Redis Cluster every key a run writes (its
// ledger, saved results, claims and parked calls) is in one hash slot, so
// its scripts never span nodes.
func TestClusterScopeOneSlot(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, "redis cluster")
	sc, err := s.Scope("alice", "run:1")
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if ok, _, err := sc.Ledger.Reserve(ctx, agent.Reservation{ID: "r1", AmountUSD: "0.5", LimitUSD: "1", Started: true}); err != nil || !ok {
		t.Fatalf("Reserve: %v %v", ok, err)
	}
	if _, err := sc.Ledger.Settle(ctx, "r1", "0.5", &agent.Entry{ToolCallID: "c1", Fingerprint: "sha256:f", Outcome: "success"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Results.Put(ctx, []byte("result")); err != nil {
		t.Fatal(err)
	}
	c, err := sc.Claims.Claim(ctx, "d1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Claims.Release(ctx, "d1", c.Token, []byte("done"), false, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := sc.Claims.Park(ctx, "cont:k", []byte("x"), time.Minute); err != nil {
		t.Fatal(err)
	}
	name := ScopeName("alice", "run:1")
	cc := s.rdb.(*redis.ClusterClient)
	slots := map[int64][]string{}
	var mu sync.Mutex // ForEachMaster asks the primaries at once
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, "*"+name+"*").Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			slot, err := n.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			slots[slot] = append(slots[slot], k)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, ks := range slots {
		n += len(ks)
	}
	t.Logf("%d keys of the run in %d hash slot(s): %v", n, len(slots), slots)
	if len(slots) != 1 || n < 4 {
		t.Fatalf("the run's %d keys are in %d slots, want at least 4 keys (ledger, result, claim, parked call) in 1", n, len(slots))
	}
	for _, ks := range slots {
		for _, k := range ks {
			if !strings.Contains(k, "{"+name+"}") {
				t.Errorf("key %s does not carry the run's hash tag", k)
			}
		}
	}
}
