package redisledger

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// nodeClient is a plain client of one cluster node, for administration.
func nodeClient(t *testing.T, p *redisProc) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.addr(), ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// migrateSlot moves slot from one primary to another the way redis-cli
// --cluster reshard does: IMPORTING on the target, MIGRATING on the
// source, MIGRATE of the keys (first moves together, in one command),
// then SETSLOT NODE on every primary. It returns how long the slot was
// in migration.
func migrateSlot(t *testing.T, primaries []*redisProc, slot int64, from, to *redisProc, first []string) time.Duration {
	t.Helper()
	ctx := context.Background()
	src, dst := nodeClient(t, from), nodeClient(t, to)
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(); err != nil {
		t.Fatal(err)
	}
	migrate := func(keys []string) {
		args := []any{"MIGRATE", "127.0.0.1", to.port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		// NOKEY when every key already moved (or none exists).
		if err := src.Do(ctx, args...).Err(); err != nil && !strings.Contains(err.Error(), "NOKEY") {
			t.Fatalf("MIGRATE %v: %v", keys, err)
		}
	}
	migrate(first)
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		migrate(keys)
	}
	for _, p := range append([]*redisProc{to, from}, primaries...) {
		if err := nodeClient(t, p).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err(); err != nil {
			t.Fatalf("SETSLOT NODE on %s: %v", p.addr(), err)
		}
	}
	return time.Since(start)
}

// primaries returns the nodes whose role is master.
func primaries(t *testing.T, nodes []*redisProc) []*redisProc {
	t.Helper()
	var out []*redisProc
	for _, p := range nodes {
		info, err := nodeClient(t, p).Info(context.Background(), "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "role:master") {
			out = append(out, p)
		}
	}
	return out
}

// TestClusterSlotMigration runs the multi-process test against a Redis
// Cluster and moves the scope's slot to another primary and back while
// the workers spend (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT
// NODE, as a resharding does). The scope's keys share a hash tag, so they
// are in one slot and move together; MIGRATE copies before it deletes,
// so nothing acknowledged may be lost: the test requires spending to
// equal the workers' settled costs to the digit, within the budget, and
// every key of the scope to end on the new primary.
func TestClusterSlotMigration(t *testing.T) {
	const scope, budget = "migrating-run", "1200.000000000000000001"
	nodes, addrs, c, s := clusterScope(t, scope)
	ctx := context.Background()
	var slot int64 = -1
	for _, k := range s.Keys() {
		n, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if slot >= 0 && n != slot {
			t.Fatalf("the scope's keys are in slots %d and %d: they would not move together", slot, n)
		}
		slot = n
	}
	from := primaryOf(nodes[0], nodes, s.keys[0])
	if from == nil {
		t.Fatal("no primary for the scope's slot")
	}
	prims := primaries(t, nodes)
	to := prims[(slices.Index(prims, from)+1)%len(prims)]
	// The moves are paced by the run's progress, not by the clock, so
	// they land mid-run however fast the machine is: at 15, 40 and 65 %
	// of the budget spent. What was spent when the last move ended must
	// be less than what the run spends in the end.
	var moves []string
	var afterMoves *big.Rat
	f := runFleet(t, addrs, true, scope, budget, 4, 16, 200, func() {
		waitSpent(t, s, budget, 15)
		took := migrateSlot(t, prims, slot, from, to, s.Keys())
		moves = append(moves, fmt.Sprintf("%s to %s in %v", from.addr(), to.addr(), took.Round(time.Millisecond)))
		waitSpent(t, s, budget, 40)
		took = migrateSlot(t, prims, slot, to, from, s.Keys())
		moves = append(moves, fmt.Sprintf("back to %s in %v", from.addr(), took.Round(time.Millisecond)))
		waitSpent(t, s, budget, 65)
		took = migrateSlot(t, prims, slot, from, to, s.Keys())
		moves = append(moves, fmt.Sprintf("to %s again in %v", to.addr(), took.Round(time.Millisecond)))
		afterMoves = spentOf(t, s)
	})
	t.Logf("slot %d moved %s", slot, strings.Join(moves, ", "))
	if end := spentOf(t, s); afterMoves.Cmp(end) >= 0 {
		t.Errorf("%s USD was spent when the last move ended and %s at the end: the moves were not mid-run", afterMoves.FloatString(9), end.FloatString(9))
	} else {
		t.Logf("%s USD spent when the last move ended, %s at the end", afterMoves.FloatString(9), end.FloatString(9))
	}
	f.check(t, c, scope, budget, noFailover)
	if f.Unavailable > 0 {
		t.Logf("%d calls failed closed during the migrations", f.Unavailable)
	}
	if len(f.Ran) == 0 {
		t.Fatal("no call ran")
	}
	// Every key of the scope now lives on the new primary.
	for _, k := range s.Keys() {
		n, err := nodeClient(t, to).Exists(ctx, k).Result()
		if err != nil || n != 1 {
			t.Errorf("key %s on the new primary %s: exists %d, %v", k, to.addr(), n, err)
		}
	}
	if p := primaryOf(nodes[0], nodes, s.keys[0]); p != to {
		t.Errorf("the slot's primary is %v, want %s", p, to.addr())
	}
}
