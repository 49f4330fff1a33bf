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
			st, _ = b.State(ctx)
			if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 0}, st.Balance); diff != "" {
				t.Errorf("after IdleTTL with nothing written, the scope is still there (-want +got):\n%s", diff)
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

// TestIdleTTLExpiresDuringOutage shows the third way past the budget (see
// Overshoot in the package doc): the only worker with a call in flight is
// cut off from Redis for longer than IdleTTL, nothing else writes, and
// the scope's keys expire. Another worker then finds the budget whole and
// spends it again; the cut-off call settles late into the emptied scope.
// Spending ends 0.8 past the budget of 1: 0.3 spent before the keys
// expired, plus 0.5 of the call whose hold lapsed.
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
		if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: json.Number(amount), LimitUSD: "1"}); !ok || err != nil {
			t.Fatalf("reserve %s: %v, %v", id, ok, err)
		}
	}
	reserve(a, "before", "0.3")
	if _, err := a.Settle(ctx, "before", "0.3", nil); err != nil {
		t.Fatal(err)
	}
	reserve(a, "in-flight", "0.5")
	proxy.cut()
	time.Sleep(idle + idle/2)
	st, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 0}, st.Balance); diff != "" {
		t.Errorf("after IdleTTL with the only worker in flight cut off (-want +got):\n%s", diff)
	}
	reserve(b, "again", "1") // the whole budget, again
	proxy.mend()
	set, err := a.Settle(ctx, "in-flight", "0.5", nil)
	if err != nil || !set.Late {
		t.Errorf("the cut-off call's settlement: %+v, %v; want it counted late", set, err)
	}
	if _, err := b.Settle(ctx, "again", "1", nil); err != nil {
		t.Fatal(err)
	}
	st, _ = b.State(ctx)
	if diff := cmp.Diff(agent.Balance{SpentUSD: "1.5", ReservedUSD: "0", Calls: 1}, st.Balance); diff != "" {
		t.Errorf("in the emptied scope, after both settled (-want +got):\n%s", diff)
	}
}
