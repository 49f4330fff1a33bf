package redisledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// TestIdleTTL: a scope's keys expire IdleTTL after its last write, and a
// lease renewal is a write: while a call is in flight, longer than
// IdleTTL, another process still sees its hold, and then its cost; once
// nothing is in flight and nothing is written, the scope expires.
func TestIdleTTL(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	const idle = 600 * time.Millisecond
	for _, tt := range []struct {
		name  string
		lease time.Duration
	}{
		{"lease shorter than IdleTTL", 300 * time.Millisecond},
		{"lease equal to IdleTTL", idle},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scope := "idle-" + tt.name
			a := newStore(t, p, scope, &Options{IdleTTL: idle, Lease: tt.lease})
			b := newStore(t, p, scope, &Options{IdleTTL: idle, Lease: tt.lease}) // another worker
			if ok, _, err := a.Reserve(ctx, agent.Reservation{ID: "long", AmountUSD: "0.6", LimitUSD: "1"}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			time.Sleep(5 * idle / 2) // the call runs
			st, err := b.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0.6", Calls: 1}, st.Balance); diff != "" {
				t.Errorf("during a call longer than IdleTTL, the other worker sees (-want +got):\n%s", diff)
			}
			if _, err := a.Settle(ctx, "long", "0.6", nil); err != nil {
				t.Fatal(err)
			}
			st, _ = b.State(ctx)
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0.6", ReservedUSD: "0", Calls: 1}, st.Balance); diff != "" {
				t.Errorf("after the call (-want +got):\n%s", diff)
			}
			time.Sleep(2 * idle) // nothing in flight, nothing written
			if _, err := b.State(ctx); !errors.Is(err, agent.ErrStoreStateLost) {
				t.Errorf("after IdleTTL with nothing written, a worker that knew the scope reads it: %v; want agent.ErrStoreStateLost", err)
			}
			// The lost mark expires too: a new run starts afresh.
			time.Sleep(2 * idle)
			st, err = newStore(t, p, scope, &Options{IdleTTL: idle, Lease: tt.lease}).State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 0}, st.Balance); diff != "" {
				t.Errorf("a new worker after the scope expired (-want +got):\n%s", diff)
			}
		})
	}
}

// TestIdleTTLShorterThanLease: keys that can expire before a lease runs
// out would give a lapsed worker's scope a fresh budget while its hold is
// still meant to count, so New refuses an IdleTTL shorter than Lease, and
// Reserve a reservation whose own lease is longer than IdleTTL, with an
// error naming both.
func TestIdleTTLShorterThanLease(t *testing.T) {
	p := startRedis(t)
	for _, tt := range []struct {
		name string
		opts Options
		want string // in New's error; "" for none
	}{
		{"shorter than Lease", Options{IdleTTL: 150 * time.Millisecond, Lease: time.Second}, "Options.IdleTTL (150ms) is shorter than Options.Lease (1s)"},
		{"shorter than the default lease", Options{IdleTTL: 2 * time.Millisecond}, "Options.IdleTTL (2ms) is shorter than Options.Lease (15s)"},
		{"equal to Lease", Options{IdleTTL: time.Second, Lease: time.Second}, ""},
		{"zero", Options{Lease: time.Second}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(p.client(t), "idle-check", &tt.opts)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				s.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: error %v, want one containing %q", err, tt.want)
			}
		})
	}
	s := newStore(t, p, "idle-check", &Options{IdleTTL: time.Second, Lease: time.Second})
	ok, _, err := s.Reserve(context.Background(), agent.Reservation{ID: "x", AmountUSD: "0.1", Lease: 2 * time.Second})
	if want := "reservation lease 2s is longer than Options.IdleTTL (1s)"; ok || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Reserve with a lease longer than IdleTTL: %v, %v; want an error containing %q", ok, err, want)
	}
	// A Guard with such a lease is refused when it is built, not failed
	// on every call as if the store were unavailable.
	_, err = agent.NewGuard(nil, &agent.GuardOptions{Store: s, Lease: 2 * time.Second})
	if want := "reservation lease 2s is longer than Options.IdleTTL (1s)"; err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, agent.ErrStoreUnavailable) {
		t.Errorf("NewGuard with a lease longer than IdleTTL: %v; want an error containing %q, not ErrStoreUnavailable", err, want)
	}
	if _, err := agent.NewGuard(nil, &agent.GuardOptions{Store: s, Lease: time.Second}); err != nil {
		t.Errorf("NewGuard with a lease equal to IdleTTL: %v", err)
	}
	st, err := s.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 0}, st.Balance); diff != "" {
		t.Errorf("after the refused reservation (-want +got):\n%s", diff)
	}
}

// TestIdleTTLExpiresDuringOutage: the only worker with a call in flight
// is cut off from Redis for longer than IdleTTL, nothing else writes, and
// the scope's keys expire. Before, another worker then found the budget
// whole and spent it again. Now every worker that knew the scope fails
// closed with agent.ErrStoreStateLost, the cut-off call's settlement too:
// nothing more is spent.
func TestIdleTTLExpiresDuringOutage(t *testing.T) {
	p := startRedis(t)
	proxy := newCutProxy(t, p.addr())
	const idle = 500 * time.Millisecond
	opts := &Options{IdleTTL: idle, Lease: idle}
	ca := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{proxy.addr()}, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { ca.Close() })
	a, err := New(ca, "outage", opts) // the worker that will be cut off
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b := newStore(t, p, "outage", opts)
	ctx := context.Background()
	reserve := func(s *Store, id, amount string) {
		t.Helper()
		if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: json.Number(amount), LimitUSD: "1", Started: true}); !ok || err != nil {
			t.Fatalf("reserve %s: %v, %v", id, ok, err)
		}
	}
	reserve(a, "before", "0.3")
	if _, err := a.Settle(ctx, "before", "0.3", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.State(ctx); err != nil { // b knows the scope
		t.Fatal(err)
	}
	reserve(a, "in-flight", "0.5")
	proxy.cut()
	time.Sleep(idle + idle/2)
	if ok, _, err := b.Reserve(ctx, agent.Reservation{ID: "again", AmountUSD: "1", LimitUSD: "1", Started: true}); ok || !errors.Is(err, agent.ErrStoreStateLost) {
		t.Errorf("after the scope expired, another worker's reservation of the whole budget: %v, %v; want refused with agent.ErrStoreStateLost", ok, err)
	}
	proxy.mend()
	if set, err := a.Settle(ctx, "in-flight", "0.5", nil); !errors.Is(err, agent.ErrStoreStateLost) {
		t.Errorf("the cut-off call's settlement into the lost scope: %+v, %v; want agent.ErrStoreStateLost", set, err)
	}
}
