package agenttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
)

// TestLedgerStore checks that the stores newStore returns keep the
// documented contract of agent.LedgerStore: the history and its
// retention rules (at most preflight.MaxHistory entries, redundant entries
// dropped, the least useful evicted first), and the money: Reserve checks
// the limits and holds in one atomic step (parallel reservations never
// take more than the limit), a retried Reserve holds once and one of an
// ended id is refused with agent.ErrReservationEnded, Settle counts a
// cost once (a repeat is a Duplicate reporting the first settlement, a
// reservation no longer held is Late and still counted) and may record an
// entry in the same step, Release frees a hold without spending but the
// call still counts, Cancel withdraws a hold and its call, StateOf
// returns the entries of one fingerprint and ReserveOf reserves and reads
// them in one step. A Guard on the store, whose calls with different
// fingerprints reserve at the same time, keeps its budget to the digit
// and its MaxCalls exactly, also with identical calls among them, calls
// released or panicking, and its budget and catalog changed meanwhile.
// Every broken promise fails t.
//
// newStore must return a new, empty store of a scope of its own on every
// call; it is called once per subtest. Amounts used have at most two
// fraction digits, so a store that rounds up to fewer digits still
// passes. Leases are not waited out (the suite reads no clock): a Settle
// of a reservation the store does not hold stands for one whose lease
// expired, and a store with leases tests their expiry in its own tests.
func TestLedgerStore(t *testing.T, newStore func(t *testing.T) agent.LedgerStore) {
	t.Helper()
	for _, tt := range []struct {
		name string
		test func(*testing.T, agent.LedgerStore)
	}{
		{"empty", ledgerEmpty},
		{"append and state", ledgerAppend},
		{"retention merges redundant entries", ledgerMerges},
		{"retention keeps at most MaxHistory", ledgerBound},
		{"reserve within the limits", ledgerReserve},
		{"a zero amount ignores the money limit", ledgerZeroAmount},
		{"settle counts once and records", ledgerSettle},
		{"settle of a hold no longer held is late", ledgerLateSettle},
		{"release frees without spending", ledgerRelease},
		{"parallel reservations never exceed the limit", ledgerParallel},
		{"parallel reservations never exceed the call limit", ledgerParallelCalls},
		{"state of one fingerprint", ledgerStateOf},
		{"a retried reserve holds once", ledgerRetriedReserve},
		{"a reserve of an ended id is refused", ledgerEndedReserve},
		{"a repeated settle reports the first", ledgerRepeatedSettle},
		{"parallel retries of one settle count once", ledgerParallelSettle},
		{"reserve-of reads one fingerprint in the same step", ledgerReserveOf},
		{"cancel withdraws the call", ledgerCancel},
		{"one guard's parallel calls stay within the budget", guardParallelBudget},
		{"one guard's parallel calls stay within MaxCalls", guardParallelCalls},
		{"one guard's mixed calls while its budget and catalog change", guardMixed},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, newStore(t)) })
	}
}

// fingerprint returns a fingerprint (64 lowercase hex digits) made from n.
func fingerprint(n int) string {
	return fmt.Sprintf("%064x", n+1)
}

// newID returns a fresh reservation id.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// state reads st's state, failing t on an error.
func state(t *testing.T, st agent.LedgerStore) agent.LedgerState {
	t.Helper()
	s, err := st.State(context.Background())
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	return s
}

// money reads a money value exactly; "" is zero. A value that is not a
// decimal fails t and reads as zero (Errorf, not Fatalf: the store suite
// calls it from its workers' goroutines too).
func money(t *testing.T, what string, n json.Number) *big.Rat {
	t.Helper()
	if n == "" {
		return new(big.Rat)
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		t.Errorf("%s is %q, not a decimal", what, n)
		return new(big.Rat)
	}
	return r
}

// wantBalance fails t unless b is spent, reserved and calls.
func wantBalance(t *testing.T, what string, b agent.Balance, spent, reserved string, calls int) {
	t.Helper()
	if money(t, what+" SpentUSD", b.SpentUSD).Cmp(money(t, "want", json.Number(spent))) != 0 ||
		money(t, what+" ReservedUSD", b.ReservedUSD).Cmp(money(t, "want", json.Number(reserved))) != 0 || b.Calls != calls {
		t.Errorf("%s: balance %+v, want spent %s, reserved %s, calls %d", what, b, spent, reserved, calls)
	}
}

func ledgerEmpty(t *testing.T, st agent.LedgerStore) {
	s := state(t, st)
	if len(s.History) != 0 {
		t.Errorf("a new store's history is %+v, want empty", s.History)
	}
	if s.Now.IsZero() {
		t.Error("State.Now is zero, want the store's clock")
	}
	wantBalance(t, "a new store", s.Balance, "0", "0", 0)
}

func ledgerAppend(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	want := []agent.Entry{
		{ToolCallID: "a", Fingerprint: fingerprint(1), Outcome: preflight.OutcomeSuccess, ResultReference: "ref-a", GoalHash: "g"},
		{ToolCallID: "b", Fingerprint: fingerprint(2), Outcome: preflight.OutcomeTerminalFailure, GoalHash: "g"},
		{ToolCallID: "c", Fingerprint: fingerprint(3), Outcome: preflight.OutcomeTransientFailure},
	}
	for _, e := range want {
		if err := st.Append(ctx, e); err != nil {
			t.Fatalf("Append(%+v): %v", e, err)
		}
	}
	s := state(t, st)
	if len(s.History) != len(want) {
		t.Fatalf("history has %d entries, want %d: %+v", len(s.History), len(want), s.History)
	}
	for i, e := range s.History {
		if e.Entry != want[i] {
			t.Errorf("history[%d] = %+v, want %+v (oldest recorded first)", i, e.Entry, want[i])
		}
		if e.At.IsZero() || e.At.After(s.Now.Add(time.Second)) {
			t.Errorf("history[%d].At = %v, want a stamp of the store's clock, no later than State.Now %v", i, e.At, s.Now)
		}
		if i > 0 && e.At.Before(s.History[i-1].At) {
			t.Errorf("history[%d].At %v is before the entry recorded before it (%v)", i, e.At, s.History[i-1].At)
		}
	}
}

func ledgerMerges(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	fp, other := fingerprint(1), fingerprint(2)
	for _, e := range []agent.Entry{
		{ToolCallID: "s1", Fingerprint: fp, Outcome: preflight.OutcomeSuccess, ResultReference: "r1", GoalHash: "g"},
		{ToolCallID: "t1", Fingerprint: fp, Outcome: preflight.OutcomeTransientFailure},
		{ToolCallID: "x1", Fingerprint: fp, Outcome: preflight.OutcomeTerminalFailure},
		{ToolCallID: "o1", Fingerprint: other, Outcome: preflight.OutcomeSuccess, ResultReference: "r9", GoalHash: "g"},
		{ToolCallID: "s2", Fingerprint: fp, Outcome: preflight.OutcomeSuccess, ResultReference: "r2", GoalHash: "g"},     // replaces s1
		{ToolCallID: "t2", Fingerprint: fp, Outcome: preflight.OutcomeTransientFailure},                                  // replaces t1
		{ToolCallID: "x2", Fingerprint: fp, Outcome: preflight.OutcomeTerminalFailure},                                   // never merged
		{ToolCallID: "s3", Fingerprint: fp, Outcome: preflight.OutcomeSuccess, GoalHash: "g"},                            // no reference: s2 stays
		{ToolCallID: "s4", Fingerprint: fp, Outcome: preflight.OutcomeSuccess, ResultReference: "r4", GoalHash: "other"}, // other goal: s2 stays
	} {
		if err := st.Append(ctx, e); err != nil {
			t.Fatalf("Append(%+v): %v", e, err)
		}
	}
	var got []string
	for _, e := range state(t, st).History {
		got = append(got, e.ToolCallID)
	}
	want := []string{"x1", "o1", "s2", "t2", "x2", "s3", "s4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("history %v, want %v (the retention rules of agent.Ledger)", got, want)
	}
}

func ledgerBound(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	// Terminal failures are evicted last: one recorded first must outlive
	// MaxHistory successes recorded after it.
	if err := st.Append(ctx, agent.Entry{ToolCallID: "keep", Fingerprint: fingerprint(0), Outcome: preflight.OutcomeTerminalFailure}); err != nil {
		t.Fatal(err)
	}
	n := preflight.MaxHistory + 5
	for i := 1; i <= n; i++ {
		e := agent.Entry{ToolCallID: "s" + strconv.Itoa(i), Fingerprint: fingerprint(i), Outcome: preflight.OutcomeSuccess, ResultReference: "r", GoalHash: "g"}
		if err := st.Append(ctx, e); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
	h := state(t, st).History
	if len(h) != preflight.MaxHistory {
		t.Fatalf("history has %d entries after %d appends, want preflight.MaxHistory = %d", len(h), n+1, preflight.MaxHistory)
	}
	if h[0].ToolCallID != "keep" {
		t.Errorf("oldest entry is %q, want the terminal failure %q (evicted last)", h[0].ToolCallID, "keep")
	}
	if last := h[len(h)-1].ToolCallID; last != "s"+strconv.Itoa(n) {
		t.Errorf("newest entry is %q, want %q (the entry just recorded is never evicted)", last, "s"+strconv.Itoa(n))
	}
	if h[1].ToolCallID != "s"+strconv.Itoa(n-preflight.MaxHistory+2) {
		t.Errorf("oldest success kept is %q, want %q (oldest evicted first)", h[1].ToolCallID, "s"+strconv.Itoa(n-preflight.MaxHistory+2))
	}
}

func reserve(t *testing.T, st agent.LedgerStore, r agent.Reservation) (bool, agent.Balance) {
	t.Helper()
	ok, b, err := st.Reserve(context.Background(), r)
	if err != nil {
		t.Fatalf("Reserve(%+v): %v", r, err)
	}
	return ok, b
}

func ledgerReserve(t *testing.T, st agent.LedgerStore) {
	ok, b := reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0.30", LimitUSD: "1", MaxCalls: 3})
	if !ok {
		t.Fatal("0.30 of 1 refused")
	}
	wantBalance(t, "after one reservation", b, "0", "0.3", 1)
	ok, b = reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0.70", LimitUSD: "1", MaxCalls: 3})
	if !ok {
		t.Fatal("0.70 more, exactly the limit, refused")
	}
	wantBalance(t, "at the limit", b, "0", "1", 2)
	ok, b = reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0.01", LimitUSD: "1", MaxCalls: 3})
	if ok {
		t.Error("0.01 over the limit held")
	}
	wantBalance(t, "after a refusal (nothing held)", b, "0", "1", 2)
	ok, _ = reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0.01", MaxCalls: 3})
	if !ok {
		t.Error("a reservation without a money limit refused")
	}
	ok, b = reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0.01", MaxCalls: 3})
	if ok {
		t.Error("a fourth call held under MaxCalls 3")
	}
	wantBalance(t, "after a call-limit refusal", b, "0", "1.01", 3)
	wantBalance(t, "State", state(t, st).Balance, "0", "1.01", 3)
}

func ledgerZeroAmount(t *testing.T, st agent.LedgerStore) {
	id := newID()
	if ok, _ := reserve(t, st, agent.Reservation{ID: id, AmountUSD: "0.50", LimitUSD: "0.50"}); !ok {
		t.Fatal("0.50 of 0.50 refused")
	}
	if ok, b := reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0", LimitUSD: "0.50"}); !ok {
		t.Errorf("a free call refused with the budget fully held (balance %+v)", b)
	}
}

func ledgerSettle(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	id := newID()
	reserve(t, st, agent.Reservation{ID: id, AmountUSD: "0.40", LimitUSD: "1"})
	rec := agent.Entry{ToolCallID: "c1", Fingerprint: fingerprint(7), Outcome: preflight.OutcomeSuccess, ResultReference: "r", GoalHash: "g"}
	s, err := st.Settle(ctx, id, "0.25", &rec)
	if err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if s.Late || s.Duplicate {
		t.Errorf("first settlement of a held reservation: %+v, want neither Late nor Duplicate", s)
	}
	wantBalance(t, "after Settle", s.Balance, "0.25", "0", 1)
	h := state(t, st).History
	if len(h) != 1 || h[0].Entry != rec {
		t.Errorf("history after Settle with a record: %+v, want the record", h)
	}
	s, err = st.Settle(ctx, id, "0.25", &rec)
	if err != nil {
		t.Fatalf("second Settle: %v", err)
	}
	if !s.Duplicate {
		t.Errorf("second settlement of %s: %+v, want Duplicate", id, s)
	}
	wantBalance(t, "after a duplicate Settle (counted once)", s.Balance, "0.25", "0", 1)
	if n := len(state(t, st).History); n != 1 {
		t.Errorf("a duplicate Settle recorded again: %d entries", n)
	}
	id2 := newID()
	reserve(t, st, agent.Reservation{ID: id2, AmountUSD: "0.10", LimitUSD: "1"})
	s, err = st.Settle(ctx, id2, "0.50", nil)
	if err != nil {
		t.Fatalf("Settle above the estimate: %v", err)
	}
	wantBalance(t, "after a cost above the hold (counted in full)", s.Balance, "0.75", "0", 2)
	if n := len(state(t, st).History); n != 1 {
		t.Errorf("Settle without a record recorded: %d entries", n)
	}
	if ok, b := reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0.30", LimitUSD: "1"}); ok {
		t.Errorf("0.30 held with 0.75 of 1 spent (balance %+v)", b)
	}
}

func ledgerLateSettle(t *testing.T, st agent.LedgerStore) {
	// A reservation the store no longer holds, as after its lease expired:
	// its cost still counts.
	s, err := st.Settle(context.Background(), newID(), "0.20", nil)
	if err != nil {
		t.Fatalf("Settle of a reservation not held: %v", err)
	}
	if !s.Late {
		t.Errorf("Settle of a reservation not held: %+v, want Late", s)
	}
	wantBalance(t, "after a late Settle", s.Balance, "0.2", "0", 0)
}

func ledgerRelease(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	id := newID()
	reserve(t, st, agent.Reservation{ID: id, AmountUSD: "0.60", LimitUSD: "1", MaxCalls: 2})
	if err := st.Release(ctx, id); err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantBalance(t, "after Release", state(t, st).Balance, "0", "0", 1)
	if err := st.Release(ctx, id); err != nil {
		t.Errorf("second Release: %v", err)
	}
	wantBalance(t, "after a second Release", state(t, st).Balance, "0", "0", 1)
	if ok, _ := reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "1", LimitUSD: "1", MaxCalls: 2}); !ok {
		t.Error("the released money was not free again")
	}
	if ok, _ := reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0", MaxCalls: 2}); ok {
		t.Error("a released call did not count against MaxCalls")
	}
}

func ledgerParallel(t *testing.T, st agent.LedgerStore) {
	const workers = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, _, err := st.Reserve(context.Background(), agent.Reservation{ID: newID(), AmountUSD: "0.10", LimitUSD: "1"})
			if err != nil {
				t.Errorf("Reserve: %v", err)
			}
			if ok {
				mu.Lock()
				held++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if held != 10 {
		t.Errorf("%d parallel reservations of 0.10 held under a limit of 1, want exactly 10", held)
	}
	wantBalance(t, "after parallel reservations", state(t, st).Balance, "0", "1", 10)
}

func ledgerParallelCalls(t *testing.T, st agent.LedgerStore) {
	const workers = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := newID()
			ok, _, err := st.Reserve(context.Background(), agent.Reservation{ID: id, AmountUSD: "0", MaxCalls: 7})
			if err != nil {
				t.Errorf("Reserve: %v", err)
			}
			if ok {
				mu.Lock()
				held++
				mu.Unlock()
				if _, err := st.Settle(context.Background(), id, "0", nil); err != nil {
					t.Errorf("Settle: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if held != 7 {
		t.Errorf("%d parallel reservations held under MaxCalls 7, want exactly 7", held)
	}
	wantBalance(t, "after parallel calls", state(t, st).Balance, "0", "0", 7)
}

func ledgerStateOf(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	var want []agent.Entry
	for i := range 12 {
		e := agent.Entry{ToolCallID: "c" + strconv.Itoa(i), Fingerprint: fingerprint(i % 3), Outcome: preflight.OutcomeTerminalFailure}
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		if i%3 == 1 {
			want = append(want, e)
		}
	}
	reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0.25", Started: true})
	s, err := st.StateOf(ctx, fingerprint(1))
	if err != nil {
		t.Fatalf("StateOf: %v", err)
	}
	var got []agent.Entry
	for _, e := range s.History {
		got = append(got, e.Entry)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("StateOf(fingerprint 1) = %+v, want %+v (its entries, oldest first)", got, want)
	}
	if s.Now.IsZero() {
		t.Error("StateOf: Now is zero, want the store's clock")
	}
	wantBalance(t, "StateOf", s.Balance, "0", "0.25", 1)
	s, err = st.StateOf(ctx, "")
	if err != nil {
		t.Fatalf("StateOf(\"\"): %v", err)
	}
	if len(s.History) != 0 {
		t.Errorf("StateOf(\"\") returned %d entries, want none", len(s.History))
	}
	wantBalance(t, "StateOf(\"\")", s.Balance, "0", "0.25", 1)
	if s, err := st.StateOf(ctx, fingerprint(99)); err != nil || len(s.History) != 0 {
		t.Errorf("StateOf(a fingerprint never recorded) = %d entries, %v; want none", len(s.History), err)
	}
}

func ledgerRetriedReserve(t *testing.T, st agent.LedgerStore) {
	r := agent.Reservation{ID: newID(), AmountUSD: "0.60", LimitUSD: "1", MaxCalls: 5, Started: true}
	for i := range 3 {
		ok, b := reserve(t, st, r)
		if !ok {
			t.Fatalf("copy %d of a reservation refused", i+1)
		}
		wantBalance(t, fmt.Sprintf("after copy %d of one reservation", i+1), b, "0", "0.6", 1)
	}
	if ok, _ := reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "0.40", LimitUSD: "1", Started: true}); !ok {
		t.Error("0.40 of the 0.40 left refused after a retried reservation: the retry held twice")
	}
}

func ledgerEndedReserve(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	settled, released := newID(), newID()
	reserve(t, st, agent.Reservation{ID: settled, AmountUSD: "0.10", Started: true})
	reserve(t, st, agent.Reservation{ID: released, AmountUSD: "0.10"})
	if _, err := st.Settle(ctx, settled, "0.10", nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, released); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{settled, released} {
		ok, _, err := st.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: "0.10", Started: true})
		if ok || !errors.Is(err, agent.ErrReservationEnded) {
			t.Errorf("Reserve of ended id %s = %v, %v; want refused with agent.ErrReservationEnded", id, ok, err)
		}
	}
	wantBalance(t, "after reserves of ended ids", state(t, st).Balance, "0.1", "0", 2)
}

func ledgerRepeatedSettle(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	id := newID()
	first, err := st.Settle(ctx, id, "0.20", nil) // not held: late
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.Settle(ctx, id, "0.30", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Late || first.Duplicate || !again.Late || !again.Duplicate {
		t.Errorf("a late settlement and its repeat: %+v, %+v; want both Late, the repeat Duplicate", first, again)
	}
	if money(t, "the repeat's CostUSD", again.CostUSD).Cmp(money(t, "want", "0.2")) != 0 {
		t.Errorf("the repeat's CostUSD is %q, want the first settlement's 0.2", again.CostUSD)
	}
	wantBalance(t, "after a repeated settlement", again.Balance, "0.2", "0", 0)
}

func ledgerParallelSettle(t *testing.T, st agent.LedgerStore) {
	id := newID()
	reserve(t, st, agent.Reservation{ID: id, AmountUSD: "0.50", LimitUSD: "1", Started: true})
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := map[bool]int{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := st.Settle(context.Background(), id, "0.35", nil)
			if err != nil {
				t.Errorf("Settle: %v", err)
				return
			}
			if s.Late {
				t.Errorf("a settlement of a held reservation (or its repeat) is Late: %+v", s)
			}
			mu.Lock()
			n[s.Duplicate]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n[false] != 1 || n[true] != 15 {
		t.Errorf("16 parallel copies of one Settle: %d first, %d duplicates; want 1 and 15", n[false], n[true])
	}
	wantBalance(t, "after parallel copies of one Settle", state(t, st).Balance, "0.35", "0", 1)
}

func ledgerReserveOf(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	mine := agent.Entry{ToolCallID: "m", Fingerprint: fingerprint(5), Outcome: preflight.OutcomeTerminalFailure}
	for _, e := range []agent.Entry{mine, {ToolCallID: "o", Fingerprint: fingerprint(6), Outcome: preflight.OutcomeTerminalFailure}} {
		if err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	ok, s, err := st.ReserveOf(ctx, agent.Reservation{ID: newID(), AmountUSD: "0.70", LimitUSD: "1", Started: true}, fingerprint(5))
	if err != nil || !ok {
		t.Fatalf("ReserveOf of 0.70 of 1: %v, %v", ok, err)
	}
	wantBalance(t, "ReserveOf, held", s.Balance, "0", "0.7", 1)
	if len(s.History) != 1 || s.History[0].Entry != mine || s.Now.IsZero() {
		t.Errorf("ReserveOf read %+v at %v, want the one entry of its fingerprint and the store's clock", s.History, s.Now)
	}
	ok, s, err = st.ReserveOf(ctx, agent.Reservation{ID: newID(), AmountUSD: "0.70", LimitUSD: "1", Started: true}, fingerprint(5))
	if err != nil || ok {
		t.Fatalf("ReserveOf of 0.70 more: %v, %v; want refused", ok, err)
	}
	wantBalance(t, "ReserveOf, refused", s.Balance, "0", "0.7", 1)
	if len(s.History) != 1 {
		t.Errorf("a refused ReserveOf read %d entries, want the state all the same (1 entry)", len(s.History))
	}
}

func ledgerCancel(t *testing.T, st agent.LedgerStore) {
	ctx := context.Background()
	id := newID()
	reserve(t, st, agent.Reservation{ID: id, AmountUSD: "0.60", LimitUSD: "1", MaxCalls: 1, Started: true})
	for range 2 {
		if err := st.Cancel(ctx, id); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
	}
	wantBalance(t, "after Cancel (twice)", state(t, st).Balance, "0", "0", 0)
	if ok, _ := reserve(t, st, agent.Reservation{ID: newID(), AmountUSD: "1", LimitUSD: "1", MaxCalls: 1, Started: true}); !ok {
		t.Error("after Cancel, the whole budget and the one call of MaxCalls 1 were not free")
	}
	if ok, _, err := st.Reserve(ctx, agent.Reservation{ID: id, AmountUSD: "0"}); ok || !errors.Is(err, agent.ErrReservationEnded) {
		t.Errorf("Reserve of a cancelled id: %v, %v; want agent.ErrReservationEnded", ok, err)
	}
}

// TestResultStore checks that the stores newStore returns keep the
// documented contract of tools.ResultStore: Get returns exactly the bytes
// Put was given (any bytes, empty included), as a copy neither side can
// change afterwards; distinct results get references that find each
// their own; a reference never saved is not found; and so under
// parallel use. A store that is also a tools.TTLResultStore keeps a
// result saved with PutTTL at least within its TTL. A store may refuse a
// result with an error (for example above its size limit); the suite
// saves results of at most 1 KiB, and fails on a refusal of those.
// Every broken promise fails t.
//
// newStore must return a new, empty store on every call; it is called
// once per subtest.
func TestResultStore(t *testing.T, newStore func(t *testing.T) tools.ResultStore) {
	t.Helper()
	for _, tt := range []struct {
		name string
		test func(*testing.T, tools.ResultStore)
	}{
		{"round trip", resultsRoundTrip},
		{"copies", resultsCopies},
		{"not found", resultsNotFound},
		{"distinct references", resultsDistinct},
		{"ttl", resultsTTL},
		{"parallel", resultsParallel},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, newStore(t)) })
	}
}

func put(t *testing.T, st tools.ResultStore, b []byte) string {
	t.Helper()
	ref, err := st.Put(context.Background(), b)
	if err != nil {
		t.Fatalf("Put of %d bytes: %v", len(b), err)
	}
	return ref
}

func wantGet(t *testing.T, st tools.ResultStore, ref string, want []byte) {
	t.Helper()
	got, ok := st.Get(context.Background(), ref)
	if !ok {
		t.Fatalf("Get(%q) found nothing, want %q", ref, want)
	}
	if !bytes.Equal(got, want) || len(got) != len(want) {
		t.Errorf("Get(%q) = %q, want %q", ref, got, want)
	}
}

func resultsRoundTrip(t *testing.T, st tools.ResultStore) {
	for _, b := range [][]byte{
		[]byte(`{"price":"101.25"}`),
		[]byte("\x00\xff\xfe not UTF-8 \r\n\t"),
		{},
		bytes.Repeat([]byte("x"), 1024),
	} {
		wantGet(t, st, put(t, st, b), b)
	}
}

func resultsCopies(t *testing.T, st tools.ResultStore) {
	b := []byte("original")
	ref := put(t, st, b)
	copy(b, "XXXXXXXX")
	wantGet(t, st, ref, []byte("original"))
	got, _ := st.Get(context.Background(), ref)
	if len(got) > 0 {
		got[0] = 'Y'
	}
	wantGet(t, st, ref, []byte("original"))
}

func resultsNotFound(t *testing.T, st tools.ResultStore) {
	ref := put(t, st, []byte("x"))
	for _, bad := range []string{"", ref + "0", "0" + ref, "no-such-reference"} {
		if b, ok := st.Get(context.Background(), bad); ok {
			t.Errorf("Get(%q) = %q, found; want nothing (never saved)", bad, b)
		}
	}
}

func resultsDistinct(t *testing.T, st tools.ResultStore) {
	refs := map[string][]byte{}
	for i := range 20 {
		b := []byte("result " + strconv.Itoa(i))
		ref := put(t, st, b)
		if prev, dup := refs[ref]; dup {
			t.Fatalf("%q and %q share the reference %q", prev, b, ref)
		}
		refs[ref] = b
	}
	for ref, b := range refs {
		wantGet(t, st, ref, b)
	}
}

func resultsTTL(t *testing.T, st tools.ResultStore) {
	ts, ok := st.(tools.TTLResultStore)
	if !ok {
		t.Skip("not a tools.TTLResultStore")
	}
	b := []byte("kept for a minute")
	ref, err := ts.PutTTL(context.Background(), b, time.Minute)
	if err != nil {
		t.Fatalf("PutTTL: %v", err)
	}
	for range 5 {
		put(t, st, []byte("more"))
	}
	wantGet(t, st, ref, b)
}

func resultsParallel(t *testing.T, st tools.ResultStore) {
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				b := []byte(fmt.Sprintf("worker %d result %d", w, i))
				ref, err := st.Put(context.Background(), b)
				if err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				got, ok := st.Get(context.Background(), ref)
				if !ok || !bytes.Equal(got, b) {
					t.Errorf("Get(%q) = %q, %v; want %q", ref, got, ok, b)
				}
			}
		}()
	}
	wg.Wait()
}
