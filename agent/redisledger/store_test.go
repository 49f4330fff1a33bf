package redisledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/google/go-cmp/cmp"
)

func newStore(t testing.TB, p *redisProc, scope string, opts *Options) *Store {
	t.Helper()
	s, err := New(p.client(t), scope, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMoney(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	s := newStore(t, p, "cust-a/run-1", nil)
	reserve := func(id, amount string, want bool) agent.Balance {
		t.Helper()
		ok, b, err := s.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: json.Number(amount), LimitUSD: "1.000000000000000001", MaxCalls: 5})
		if err != nil || ok != want {
			t.Fatalf("Reserve(%s, %s) = %v, %v; want %v", id, amount, ok, err, want)
		}
		return b
	}
	reserve("a", "0.600000000000000001", true)
	reserve("b", "0.400000000000000001", false) // one attodollar too many
	if b := reserve("b", "0.4", true); b.ReservedUSD != "1.000000000000000001" {
		t.Errorf("held %s, want 1.000000000000000001", b.ReservedUSD)
	}
	if ok, b, err := s.Reserve(ctx, agent.Reservation{ID: "a", AmountUSD: "0"}); !ok || err != nil || b.ReservedUSD != "1.000000000000000001" {
		t.Errorf("a retried reservation under one id: %v, %+v, %v; want held once", ok, b, err)
	}
	set, err := s.Settle(ctx, "a", "0.25", nil)
	if err != nil || set.Late || set.Duplicate {
		t.Fatalf("Settle(a) = %+v, %v", set, err)
	}
	if set, _ := s.Settle(ctx, "a", "0.25", nil); !set.Duplicate || set.Balance.SpentUSD != "0.25" {
		t.Errorf("second Settle(a) = %+v, want Duplicate and spent 0.25", set)
	}
	if err := s.Release(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if set, _ := s.Settle(ctx, "never-held", "0.125", nil); !set.Late {
		t.Errorf("Settle(never-held) = %+v, want Late", set)
	}
	reserve("c", "0", true)
	reserve("d", "0.01", true)
	reserve("e", "12345678901234567890.5", false) // over the limit, exact
	st, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Balance{SpentUSD: "0.375", ReservedUSD: "0.01", Calls: 4}
	if diff := cmp.Diff(want, st.Balance); diff != "" {
		t.Errorf("balance (-want +got):\n%s", diff)
	}
	// Another scope sees none of it.
	other := newStore(t, p, "cust-b/run-1", nil)
	if st, _ := other.State(ctx); st.Balance != (agent.Balance{SpentUSD: "0", ReservedUSD: "0"}) {
		t.Errorf("scope cust-b sees %+v", st.Balance)
	}
}

func TestAmountBounds(t *testing.T) {
	for _, tt := range []struct {
		in    string
		atto  string // what toAtto gives, rounded up; "" when refused
		exact bool   // exactAtto gives the same; else it refuses with ErrPrecision
	}{
		{"0", "0", true},
		{"", "0", true},
		{"1", "1000000000000000000", true},
		{"0.000000000000000001", "1", true},
		{"1e-18", "1", true},
		{"999999999.999999999999999999", "999999999999999999999999999", true},
		{"0.0000000000000000001", "1", false},
		{"0.0500000000000000001", "50000000000000001", false},
		{"0.0500000000000000009", "50000000000000001", false},
		{"1.0000000000000000000001", "1000000000000000001", false},
		{"1e-40", "1", false},
		{"-1", "", false},
		{"-0.0000000000000000001", "", false},
		{"1e40", "", false},
		{"abc", "", false},
	} {
		got, err := toAtto(json.Number(tt.in))
		if tt.atto == "" {
			if err == nil {
				t.Errorf("toAtto(%q) = %q; want an error", tt.in, got)
			}
			if got, err := exactAtto(json.Number(tt.in)); err == nil || errors.Is(err, ErrPrecision) {
				t.Errorf("exactAtto(%q) = %q, %v; want an error other than ErrPrecision", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.atto {
			t.Errorf("toAtto(%q) = %q, %v; want %q", tt.in, got, err, tt.atto)
		}
		exact, err := exactAtto(json.Number(tt.in))
		switch {
		case tt.exact && (err != nil || exact != tt.atto):
			t.Errorf("exactAtto(%q) = %q, %v; want %q", tt.in, exact, err, tt.atto)
		case !tt.exact && !errors.Is(err, ErrPrecision):
			t.Errorf("exactAtto(%q) = %q, %v; want ErrPrecision", tt.in, exact, err)
		}
		if !tt.exact {
			continue
		}
		back, err := fromAtto(got)
		if err != nil || agentCmp(string(back), tt.in) != 0 {
			t.Errorf("fromAtto(%q) = %q, %v", got, back, err)
		}
	}
}

func agentCmp(a, b string) int {
	if b == "" {
		b = "0"
	}
	x, _ := exactAtto(json.Number(a))
	y, _ := exactAtto(json.Number(b))
	return strings.Compare(fmt.Sprintf("%40s", x), fmt.Sprintf("%40s", y))
}

func TestLeaseExpiryAndLateSettlement(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	s := newStore(t, p, "lease", nil)
	// A reservation whose holder stopped renewing: Close stops this
	// store's renewer, as a dead process would.
	s.Close()
	ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "x", AmountUSD: "0.5", LimitUSD: "1", Lease: 300 * time.Millisecond})
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	time.Sleep(400 * time.Millisecond)
	st, err := s.State(ctx)
	if err != nil || st.Balance.ReservedUSD != "0" {
		t.Fatalf("after the lease: %+v, %v; want the money back", st.Balance, err)
	}
	set, err := s.Settle(ctx, "x", "0.3", nil)
	if err != nil || !set.Late || set.Balance.SpentUSD != "0.3" {
		t.Fatalf("late Settle = %+v, %v; want Late with 0.3 spent", set, err)
	}
	// A started reservation is charged when its lease expires; its late
	// settlement replaces the charge by the cost, and a repeat of that
	// settlement reports it late and counts nothing.
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "y", AmountUSD: "0.5", LimitUSD: "1", Lease: 300 * time.Millisecond, Started: true}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	time.Sleep(400 * time.Millisecond)
	if st, err := s.State(ctx); err != nil || st.Balance.ReservedUSD != "0" || st.Balance.SpentUSD != "0.8" {
		t.Fatalf("after the lease of a started call: %+v, %v; want its 0.5 charged (spent 0.8)", st.Balance, err)
	}
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "z", AmountUSD: "0.5", LimitUSD: "1", Started: true}); ok || err != nil {
		t.Errorf("0.5 held over a charged started call: %v, %v; want refused (0.8 of 1 spent)", ok, err)
	}
	set, err = s.Settle(ctx, "y", "0.1", nil)
	if err != nil || !set.Late || set.Duplicate || set.Balance.SpentUSD != "0.4" {
		t.Fatalf("late Settle of a charged call = %+v, %v; want Late, its charge replaced by 0.1 (spent 0.4)", set, err)
	}
	set, err = s.Settle(ctx, "y", "0.1", nil)
	if err != nil || !set.Late || !set.Duplicate || set.Balance.SpentUSD != "0.4" {
		t.Fatalf("repeated late Settle = %+v, %v; want Late and Duplicate, nothing counted", set, err)
	}
}

func TestLeaseRenewedWhileAlive(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	s := newStore(t, p, "renew", nil)
	ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "x", AmountUSD: "0.5", Lease: 300 * time.Millisecond})
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	time.Sleep(time.Second) // three leases long
	st, _ := s.State(ctx)
	if st.Balance.ReservedUSD != "0.5" {
		t.Fatalf("a renewed hold was given back: %+v", st.Balance)
	}
	if set, _ := s.Settle(ctx, "x", "0.5", nil); set.Late {
		t.Errorf("renewed hold settled late")
	}
}

// TestSettleEndsTheHold: a cost with more fraction digits than the ledger
// counts is counted rounded up, never refused; and whatever Settle
// returns, this process stops renewing the hold, so a hold whose
// settlement failed is given back when its lease runs out instead of
// being held for ever.
func TestSettleEndsTheHold(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	for _, tt := range []struct {
		cost    string
		wantErr bool
		want    agent.Balance // after two leases
	}{
		{cost: "0.0500000000000000001", want: agent.Balance{SpentUSD: "0.050000000000000001", ReservedUSD: "0", Calls: 1}},
		{cost: "0.05", want: agent.Balance{SpentUSD: "0.05", ReservedUSD: "0", Calls: 1}},
		{cost: "abc", wantErr: true, want: agent.Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 1}},
		{cost: "-1", wantErr: true, want: agent.Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 1}},
	} {
		t.Run(tt.cost, func(t *testing.T) {
			s := newStore(t, p, "settle-"+tt.cost, nil)
			if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "x", AmountUSD: "0.4", LimitUSD: "1", Lease: lease}); !ok || err != nil {
				t.Fatal(ok, err)
			}
			_, err := s.Settle(ctx, "x", json.Number(tt.cost), nil)
			if (err != nil) != tt.wantErr {
				t.Errorf("Settle(%s) error: %v; want an error: %v", tt.cost, err, tt.wantErr)
			}
			time.Sleep(2 * lease)
			st, err := s.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, st.Balance); diff != "" {
				t.Errorf("balance two leases after Settle(%s) (-want +got):\n%s", tt.cost, diff)
			}
		})
	}
}

// TestSettleGivesUp: when Redis stays unreachable for SettleTimeout,
// Settle returns an error and this process no longer renews the hold.
func TestSettleGivesUp(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	s := newStore(t, p, "gives-up", &Options{SettleTimeout: 300 * time.Millisecond})
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "x", AmountUSD: "0.4"}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	p.kill()
	if _, err := s.Settle(ctx, "x", "0.1", nil); err == nil {
		t.Fatal("Settle with Redis down succeeded")
	}
	if s.keeper.Holds("x") {
		t.Error("the hold of a settlement that gave up is still being renewed")
	}
}

// TestHistoryRetentionMatchesMemory records the same random outcomes in
// the Redis store and the in-memory one: the Lua retention rules must keep
// exactly the entries the Go rules keep.
func TestHistoryRetentionMatchesMemory(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	s := newStore(t, p, "hist", nil)
	mem := agent.NewMemoryLedgerStore(nil)
	rng := rand.New(rand.NewPCG(1, 2))
	outcomes := []preflight.Outcome{preflight.OutcomeSuccess, preflight.OutcomeTerminalFailure, preflight.OutcomeTransientFailure}
	entries := func(st agent.LedgerState) []agent.Entry {
		var out []agent.Entry
		for _, e := range st.History {
			out = append(out, e.Entry)
		}
		return out
	}
	// compare checks the whole history and, for each fingerprint, the
	// entries the Guard reads.
	compare := func(i int) {
		t.Helper()
		got, err := s.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := mem.State(ctx)
		if diff := cmp.Diff(entries(want), entries(got)); diff != "" {
			t.Fatalf("after %d entries, Redis history differs from the in-memory one (-memory +redis):\n%s", i+1, diff)
		}
		for fp := range 12 {
			fp := strings.Repeat(fmt.Sprintf("%x", fp), 64)
			got, err := s.StateOf(ctx, fp)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := mem.StateOf(ctx, fp)
			if diff := cmp.Diff(entries(want), entries(got)); diff != "" {
				t.Fatalf("after %d entries, Redis entries of %.8s… differ from the in-memory ones (-memory +redis):\n%s", i+1, fp, diff)
			}
		}
	}
	for i := range 600 {
		e := agent.Entry{
			ToolCallID:  fmt.Sprintf("c%d", i),
			Fingerprint: strings.Repeat(fmt.Sprintf("%x", rng.IntN(12)), 64),
			Outcome:     outcomes[rng.IntN(3)],
			GoalHash:    []string{"", "g1", "g2"}[rng.IntN(3)],
		}
		if rng.IntN(2) == 0 {
			e.ResultReference = "ref-" + e.ToolCallID
		}
		if i%2 == 0 {
			if err := s.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		} else if _, err := s.Settle(ctx, "id"+e.ToolCallID, "0", &e); err != nil {
			t.Fatal(err)
		}
		_ = mem.Append(ctx, e)
		if i%41 == 0 || i == 599 {
			compare(i)
		}
	}
	got, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.History) != preflight.MaxHistory {
		t.Errorf("%d entries, want %d", len(got.History), preflight.MaxHistory)
	}
}

func TestResultStore(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	c := p.client(t)
	a, _ := NewResultStore(c, "cust-a", &ResultOptions{MaxBytes: 64, TTL: 300 * time.Millisecond})
	a2, _ := NewResultStore(p.client(t), "cust-a", nil) // another process, in effect
	b, _ := NewResultStore(c, "cust-b", nil)
	data := []byte("{\"x\":1}\x00\xff binary \r\n")
	ref, err := a.Put(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := a2.Get(ctx, ref); !ok || !bytes.Equal(got, data) {
		t.Errorf("Get from another client = %q, %v; want the saved bytes", got, ok)
	}
	if _, ok := b.Get(ctx, ref); ok {
		t.Error("another customer's store found the result")
	}
	if _, err := a.Put(ctx, make([]byte, 65)); !errors.Is(err, tools.ErrResultTooLarge) {
		t.Errorf("Put of 65 bytes: %v, want ErrResultTooLarge", err)
	}
	for _, bad := range []string{"", "redis:", "redis:zz", "mem:1", ref + "0"} {
		if _, ok := a.Get(ctx, bad); ok {
			t.Errorf("Get(%q) found something", bad)
		}
	}
	time.Sleep(400 * time.Millisecond)
	if _, ok := a.Get(ctx, ref); ok {
		t.Error("result outlived its TTL")
	}
}

func TestScopeValidation(t *testing.T) {
	for _, scope := range []string{"", "a{b", "a}b", strings.Repeat("x", 201)} {
		if _, err := New(nil, scope, nil); !errors.Is(err, ErrScope) {
			t.Errorf("New(%q): %v, want ErrScope", scope, err)
		}
	}
	if _, err := New(nil, "ok", &Options{Prefix: "{p}"}); !errors.Is(err, ErrScope) {
		t.Errorf("prefix with a brace: %v", err)
	}
}

// TestSettledRetention: an ended reservation is remembered for
// Options.SettledRetention (a repeated Settle is a Duplicate, a Reserve of
// its id refused), then forgotten, its record and its place in the queue
// of ended ids deleted, a few at a time by the calls that follow.
func TestSettledRetention(t *testing.T) {
	p := startRedis(t)
	ctx := context.Background()
	s := newStore(t, p, "retention", &Options{SettledRetention: 2 * time.Second})
	c := p.client(t)
	fields := func(prefix string) map[string]bool {
		t.Helper()
		h, err := c.HGetAll(ctx, s.Keys()[0]).Result()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for k, v := range h {
			if strings.HasPrefix(k, "r:"+prefix) {
				got[k] = true
			}
			if _, tk, _ := strings.Cut(v, " "); strings.HasPrefix(k, "x:") && strings.HasPrefix(tk, prefix) {
				got[k] = true
			}
		}
		return got
	}
	for i := range 40 {
		spendOnce(t, s, "a"+strconv.Itoa(i))
	}
	if n := len(fields("a")); n != 80 {
		t.Fatalf("%d fields for 40 ended reservations, want 80 (a record and a queue entry each)", n)
	}
	if set, err := s.Settle(ctx, "a0", "0.1", nil); err != nil || !set.Duplicate {
		t.Errorf("a repeated Settle within the retention: %+v, %v; want Duplicate", set, err)
	}
	time.Sleep(2200 * time.Millisecond)
	start := time.Now()
	for i := range 40 {
		spendOnce(t, s, "b"+strconv.Itoa(i))
	}
	if time.Since(start) > 1500*time.Millisecond {
		t.Skip("the machine is too slow for this test's timing: 40 calls took", time.Since(start))
	}
	if left := fields("a"); len(left) != 0 {
		t.Errorf("%d fields of reservations ended past the retention are left: %v", len(left), left)
	}
	if n := len(fields("b")); n != 80 {
		t.Errorf("%d fields for the 40 reservations within the retention, want 80", n)
	}
	if set, err := s.Settle(ctx, "b0", "0.1", nil); err != nil || !set.Duplicate {
		t.Errorf("a repeated Settle within the retention: %+v, %v; want Duplicate", set, err)
	}
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "a0", AmountUSD: "0.1", LimitUSD: "100", Started: true}); !ok || err != nil {
		t.Errorf("Reserve of an id forgotten after the retention: %v, %v; want held", ok, err)
	}
	if st, err := s.State(ctx); err != nil || st.Balance.SpentUSD != "8" {
		t.Errorf("State: %+v, %v; want 8 spent (80 settlements of 0.1, the repeats not counted)", st.Balance, err)
	}
}
