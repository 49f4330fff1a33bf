package sharedstate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// TestWindowShared: two replicas' Windows of one principal spend one
// budget, on Redis and on PostgreSQL; another principal's is its own, and
// a hold made in one window is settled in it.
func TestWindowShared(t *testing.T) {
	for _, backend := range []string{"redis", "redis cluster", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var raw string
			switch backend {
			case "redis":
				raw = "redis://" + testpart.StartRedis(t, "--appendonly", "yes")
			case "redis cluster":
				addrs := testpart.StartRedisCluster(t, "--appendonly", "yes")
				raw = "redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
			default:
				raw = testpart.StartPostgres(t)
			}
			ctx := context.Background()
			var replicas []*Store
			for range 2 {
				s, err := Open(ctx, raw, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				replicas = append(replicas, s)
			}
			a := replicas[0].Window("alice", time.Hour, "0.35")
			b := replicas[1].Window("alice", time.Hour, "0.35")
			bob := replicas[1].Window("bob", time.Hour, "0.35")
			var got []bool
			for i, w := range []*Window{a, b, a, b} {
				ok, err := w.Reserve(ctx, fmt.Sprint("r", i), "0.10")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ok)
			}
			if fmt.Sprint(got) != "[true true true false]" {
				t.Fatalf("reservations of 0.10 under 0.35 through two replicas: %v, want three", got)
			}
			// Settled at less, withdrawn: room again for one more.
			if err := a.Settle(ctx, "r0", "0.05"); err != nil {
				t.Fatal(err)
			}
			if err := b.Cancel(ctx, "r1"); err != nil {
				t.Fatal(err)
			}
			if ok, err := b.Reserve(ctx, "r4", "0.15"); err != nil || !ok {
				t.Fatalf("0.15 with 0.05 spent and 0.10 held of 0.35: %v %v, want held", ok, err)
			}
			if ok, err := b.Reserve(ctx, "r5", "0.10"); err != nil || ok {
				t.Fatalf("0.10 with 0.30 spent or held of 0.35: %v %v, want refused", ok, err)
			}
			if ok, err := bob.Reserve(ctx, "r6", "0.30"); err != nil || !ok {
				t.Fatalf("bob's 0.30: %v %v, want held in his own window", ok, err)
			}
		})
	}
}
