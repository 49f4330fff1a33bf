package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
)

// pauseOnceStore pauses the first ReserveOf made after arm was set, once
// it reserved: it signals read and waits for resume before it answers.
type pauseOnceStore struct {
	LedgerStore
	arm    atomic.Bool
	read   chan struct{}
	resume chan struct{}
}

func (s *pauseOnceStore) ReserveOf(ctx context.Context, r Reservation, fp string) (bool, LedgerState, error) {
	ok, st, err := s.LedgerStore.ReserveOf(ctx, r, fp)
	if s.arm.CompareAndSwap(true, false) {
		s.read <- struct{}{}
		<-s.resume
	}
	return ok, st, err
}

// waitSettleWaiter waits until a call of g waits for tentative decisions
// to be settled.
func waitSettleWaiter(t *testing.T, g *Guard) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // not a timing claim: it would wait for ever
	for {
		g.mu.Lock()
		waiting := g.settleWake != nil
		g.mu.Unlock()
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no call waits for the tentative decision after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

type beginAnswer struct {
	p   *Permit
	rep Report
	err error
}

func goBegin(ctx context.Context, g *Guard, req preflight.ToolCallRequest) chan beginAnswer {
	c := make(chan beginAnswer, 1)
	go func() {
		p, rep, err := g.Begin(ctx, req)
		c <- beginAnswer{p, rep, err}
	}()
	return c
}

// TestGuardNoDeferralForTentativeHold: on a Guard with room for one more
// call (MaxCalls) or for the new call's money (BudgetUSD) but not for two,
// a new call is proposed while another decision of the Guard holds its
// tentative reservation (paused in the store right after reserving).
// When that decision is to reuse a result (withdrawn), the new call runs,
// as when the Guard decided one call at a time; when it is to run, the
// new call stays deferred. Either way the new call waits for it.
func TestGuardNoDeferralForTentativeHold(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      GuardOptions
		done      preflight.ToolCallRequest // run first
		other     preflight.ToolCallRequest // paused after reserving
		otherRuns bool
		newCall   preflight.ToolCallRequest
		reason    preflight.ReasonCode // of the new call when it stays deferred
		balance   Balance              // at the end, every permit ended
	}{
		{"call limit, other reuses", GuardOptions{MaxCalls: 2}, searchReq("done", "0.1"), searchReq("done", "0.1"), false, searchReq("new", "0.1"),
			"", Balance{Calls: 2, SpentUSD: "0.2", ReservedUSD: "0"}},
		{"call limit, other runs", GuardOptions{MaxCalls: 2}, searchReq("done", "0.1"), searchReq("other", "0.1"), true, searchReq("new", "0.1"),
			preflight.ReasonCallLimitReached, Balance{Calls: 2, SpentUSD: "0.2", ReservedUSD: "0"}},
		{"money, other reuses", GuardOptions{BudgetUSD: "1"}, searchReq("done", "0.5"), searchReq("done", "0.5"), false, searchReq("new", "0.4"),
			"", Balance{Calls: 2, SpentUSD: "0.9", ReservedUSD: "0"}},
		{"money, other runs", GuardOptions{BudgetUSD: "1"}, searchReq("done", "0.5"), searchReq("other", "0.5"), true, searchReq("new", "0.4"),
			preflight.ReasonBudgetExceeded, Balance{Calls: 2, SpentUSD: "1", ReservedUSD: "0"}},
		{"reduce scope under SkipAdvised, other reuses", GuardOptions{BudgetUSD: "1", Advise: SkipAdvised}, searchReq("done", "0.2"), searchReq("done", "0.2"), false, scopeReq("new", "0.35"),
			"", Balance{Calls: 2, SpentUSD: "0.55", ReservedUSD: "0"}},
		{"reduce scope under SkipAdvised, other runs", GuardOptions{BudgetUSD: "1", Advise: SkipAdvised}, searchReq("done", "0.2"), searchReq("other", "0.2"), true, scopeReq("new", "0.35"),
			preflight.ReasonReduceScope, Balance{Calls: 2, SpentUSD: "0.4", ReservedUSD: "0"}},
		{"unsupported operation over budget, other reuses", GuardOptions{BudgetUSD: "1"}, searchReq("done", "0.5"), searchReq("done", "0.5"), false, unsupportedReq("0.4"),
			"", Balance{Calls: 2, SpentUSD: "0.9", ReservedUSD: "0"}},
		{"unsupported operation over budget, other runs", GuardOptions{BudgetUSD: "1"}, searchReq("done", "0.5"), searchReq("other", "0.5"), true, unsupportedReq("0.4"),
			preflight.ReasonBudgetExceeded, Balance{Calls: 2, SpentUSD: "1", ReservedUSD: "0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &pauseOnceStore{LedgerStore: NewMemoryLedgerStore(nil), read: make(chan struct{}), resume: make(chan struct{})}
			opts := tt.opts
			opts.Store = st
			g, err := NewGuard(nil, &opts)
			if err != nil {
				t.Fatal(err)
			}
			run := func(context.Context) (Completion, error) { return Completion{ResultReference: "r"}, nil }
			if rep, err := g.Call(context.Background(), tt.done, run); err != nil || !rep.Called {
				t.Fatalf("the first call: called %v, error %v", rep.Called, err)
			}
			st.arm.Store(true)
			other := goBegin(context.Background(), g, tt.other)
			<-st.read // the other decision holds its tentative reservation
			newCall := goBegin(context.Background(), g, tt.newCall)
			waitSettleWaiter(t, g)
			close(st.resume)

			o := <-other
			if o.err != nil {
				t.Fatal(o.err)
			}
			if (o.p != nil) != tt.otherRuns {
				t.Fatalf("the other call: permit %v (%s %v), want one: %v", o.p != nil, o.rep.Decision.Verdict, o.rep.Decision.ReasonCodes, tt.otherRuns)
			}
			if !tt.otherRuns && o.rep.ReuseReference != "r" {
				t.Errorf("the other call: reuse %q, want r", o.rep.ReuseReference)
			}
			n := <-newCall
			if n.err != nil {
				t.Fatal(n.err)
			}
			switch {
			case tt.reason == "" && n.p == nil:
				t.Errorf("the new call was not run: %v, want it run (the other decision withdrew its hold)", n.rep.ReasonCodes())
			case tt.reason != "" && n.p != nil:
				t.Errorf("the new call was run, want it deferred with %s (the other call runs)", tt.reason)
			case tt.reason != "" && (n.rep.Decision == nil || n.rep.ReasonCodes()[0] != tt.reason):
				t.Errorf("the new call: %v, want %s first", n.rep.ReasonCodes(), tt.reason)
			}
			for _, p := range []*Permit{o.p, n.p} {
				if p != nil {
					if _, err := p.End(Completion{ResultReference: "r"}, nil); err != nil {
						t.Error(err)
					}
				}
			}
			s, err := st.State(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if s.Balance != tt.balance {
				t.Errorf("balance %+v, want %+v", s.Balance, tt.balance)
			}
			waitLockState(t, g, "the Guard at rest", func(s lockState) bool { return s.turns == 0 && s.deciding == 0 })
			if g.tentative != 0 || g.settleWake != nil {
				t.Errorf("%d decisions still tentative, waiters' channel %v", g.tentative, g.settleWake)
			}
		})
	}
}

// scopeReq is searchReq for a call whose scope can be reduced.
func scopeReq(query, cost string) preflight.ToolCallRequest {
	r := searchReq(query, cost)
	r.Capabilities = &preflight.Capabilities{CanReusePriorResult: true, CanReduceScope: true}
	return r
}

// unsupportedReq is a call of an operation the catalog lacks, like none
// it has.
func unsupportedReq(cost string) preflight.ToolCallRequest {
	r := searchReq("new", cost)
	r.Tool.Provider, r.Tool.Operation = "acme", "render_quarterly_report"
	return r
}

// TestGuardTentativeWaitCancelled: a new call waiting for another
// decision's tentative hold to be settled gives up when its context ends:
// its own reservation is withdrawn, it leaves no turn or place at the
// gate, and the other call and later calls go on.
func TestGuardTentativeWaitCancelled(t *testing.T) {
	st := &pauseOnceStore{LedgerStore: NewMemoryLedgerStore(nil), read: make(chan struct{}), resume: make(chan struct{})}
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	run := func(context.Context) (Completion, error) { return Completion{ResultReference: "r"}, nil }
	if _, err := g.Call(context.Background(), searchReq("done", "0.5"), run); err != nil {
		t.Fatal(err)
	}
	st.arm.Store(true)
	other := goBegin(context.Background(), g, searchReq("done", "0.5"))
	<-st.read
	ctx, cancel := context.WithCancel(context.Background())
	newCall := goBegin(ctx, g, searchReq("new", "0.4"))
	waitSettleWaiter(t, g)
	cancel()
	n := <-newCall
	if n.p != nil || !errors.Is(n.err, context.Canceled) {
		t.Fatalf("the cancelled call: permit %v, error %v; want none and context.Canceled", n.p != nil, n.err)
	}
	s, err := st.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Only the paused decision's hold is left.
	if want := (Balance{Calls: 2, SpentUSD: "0.5", ReservedUSD: "0.5"}); s.Balance != want {
		t.Errorf("balance with the other decision paused %+v, want %+v", s.Balance, want)
	}
	close(st.resume)
	if o := <-other; o.err != nil || o.p != nil || o.rep.ReuseReference != "r" {
		t.Fatalf("the other call: permit %v, reuse %q, error %v; want reuse of r", o.p != nil, o.rep.ReuseReference, o.err)
	}
	waitLockState(t, g, "the Guard at rest", func(s lockState) bool { return s.turns == 0 && s.deciding == 0 })
	if rep, err := g.Call(context.Background(), searchReq("new", "0.4"), run); err != nil || !rep.Called {
		t.Errorf("a later call: called %v (%v), error %v; want it run", rep.Called, rep.ReasonCodes(), err)
	}
	if s, err = st.State(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := (Balance{Calls: 2, SpentUSD: "0.9", ReservedUSD: "0"}); s.Balance != want {
		t.Errorf("final balance %+v, want %+v", s.Balance, want)
	}
}

// stepStore pauses the ReserveOf calls it numbers in pause (1 for the
// first) once they reserved: each sends its number on read and waits until
// its channel is closed.
type stepStore struct {
	LedgerStore
	n     atomic.Int32
	pause map[int32]chan struct{}
	read  chan int32
}

func (s *stepStore) ReserveOf(ctx context.Context, r Reservation, fp string) (bool, LedgerState, error) {
	ok, st, err := s.LedgerStore.ReserveOf(ctx, r, fp)
	n := s.n.Add(1)
	if c := s.pause[n]; c != nil {
		s.read <- n
		<-c
	}
	return ok, st, err
}

// TestGuardWithdrawnDuringReservation: a new call reads the balance while
// another decision holds its tentative reservation, and that decision
// withdraws it (a reuse) and is settled before the new call is decided: no
// decision is tentative any more when the new call is deferred, yet the
// hold it saw is gone, so it is decided again and runs.
func TestGuardWithdrawnDuringReservation(t *testing.T) {
	st := &stepStore{LedgerStore: NewMemoryLedgerStore(nil), read: make(chan int32),
		pause: map[int32]chan struct{}{2: make(chan struct{}), 3: make(chan struct{})}}
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	run := func(context.Context) (Completion, error) { return Completion{ResultReference: "r"}, nil }
	if _, err := g.Call(context.Background(), searchReq("done", "0.5"), run); err != nil { // ReserveOf 1
		t.Fatal(err)
	}
	other := goBegin(context.Background(), g, searchReq("done", "0.5")) // ReserveOf 2
	if n := <-st.read; n != 2 {
		t.Fatalf("reservation %d paused, want 2", n)
	}
	newCall := goBegin(context.Background(), g, searchReq("new", "0.4")) // ReserveOf 3
	if n := <-st.read; n != 3 {
		t.Fatalf("reservation %d paused, want 3", n)
	}
	close(st.pause[2])
	if o := <-other; o.err != nil || o.p != nil || o.rep.ReuseReference != "r" {
		t.Fatalf("the other call: permit %v, reuse %q, error %v; want reuse of r", o.p != nil, o.rep.ReuseReference, o.err)
	}
	waitLockState(t, g, "the other call gone", func(s lockState) bool { return s.turns == 1 })
	close(st.pause[3])
	n := <-newCall
	if n.err != nil || n.p == nil {
		t.Fatalf("the new call: permit %v (%v), error %v; want it run", n.p != nil, n.rep.ReasonCodes(), n.err)
	}
	if _, err := n.p.End(Completion{ResultReference: "r"}, nil); err != nil {
		t.Fatal(err)
	}
	s, err := st.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Balance{Calls: 2, SpentUSD: "0.9", ReservedUSD: "0"}); s.Balance != want {
		t.Errorf("balance %+v, want %+v", s.Balance, want)
	}
}
