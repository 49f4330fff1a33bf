package agent

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
)

// overlapStore is a slow store: each ReserveOf waits, up to wait, for
// another one to be under way, and the most under way at once is kept.
type overlapStore struct {
	LedgerStore
	wait   time.Duration
	inside atomic.Int32
	most   atomic.Int32
	mu     sync.Mutex
	two    chan struct{} // closed when two are under way
}

func (s *overlapStore) ReserveOf(ctx context.Context, r Reservation, fp string) (bool, LedgerState, error) {
	n := s.inside.Add(1)
	defer s.inside.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	if n >= 2 {
		s.mu.Lock()
		select {
		case <-s.two:
		default:
			close(s.two)
		}
		s.mu.Unlock()
	}
	select {
	case <-s.two:
	case <-time.After(s.wait): // not a timing claim: the other call may never come
	}
	return s.LedgerStore.ReserveOf(ctx, r, fp)
}

// TestGuardReservesOverlap: two calls with different fingerprints on one
// Guard reserve at the same time (the second does not wait for the
// first's trip to the store); two identical calls never do.
func TestGuardReservesOverlap(t *testing.T) {
	for _, tt := range []struct {
		name   string
		a, b   preflight.ToolCallRequest
		wait   time.Duration
		atOnce int32
	}{
		{"different calls", searchReq("a", "0.1"), searchReq("b", "0.1"), 10 * time.Second, 2},
		{"identical calls", searchReq("a", "0.1"), searchReq("a", "0.1"), 200 * time.Millisecond, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &overlapStore{LedgerStore: NewMemoryLedgerStore(nil), wait: tt.wait, two: make(chan struct{})}
			g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: st})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for _, req := range []preflight.ToolCallRequest{tt.a, tt.b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := g.Call(context.Background(), req, func(context.Context) (Completion, error) { return Completion{ResultReference: "r"}, nil }); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if got := st.most.Load(); got != tt.atOnce {
				t.Errorf("at most %d reservations were under way at once, want %d", got, tt.atOnce)
			}
		})
	}
}

// TestGuardIdenticalCallsCoalesce: many identical read-only calls proposed
// at once on one Guard, the first still running: one runs, every other
// one is told it is in flight and gets its result.
func TestGuardIdenticalCallsCoalesce(t *testing.T) {
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "10"})
	if err != nil {
		t.Fatal(err)
	}
	const workers = 16
	type answer struct {
		p   *Permit
		rep Report
		err error
	}
	answers := make(chan answer, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, rep, err := g.Begin(context.Background(), searchReq("same", "0.1"))
			answers <- answer{p, rep, err}
		}()
	}
	wg.Wait()
	close(answers)
	var leader *Permit
	var flights []*Flight
	for a := range answers {
		switch {
		case a.err != nil:
			t.Fatal(a.err)
		case a.p != nil && leader != nil:
			t.Fatal("two identical read-only calls were both allowed to run at once")
		case a.p != nil:
			leader = a.p
		case a.rep.InFlight != nil:
			flights = append(flights, a.rep.InFlight)
		default:
			t.Fatalf("an identical call was refused with %+v, want InFlight", a.rep.Decision)
		}
	}
	if leader == nil || len(flights) != workers-1 {
		t.Fatalf("leader %v, %d calls in flight; want one leader and %d waiting", leader != nil, len(flights), workers-1)
	}
	if _, err := leader.End(Completion{ResultReference: "the-result"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range flights {
		if f != flights[0] {
			t.Fatal("the waiting calls wait on different flights")
		}
		if res, err := f.Wait(context.Background()); err != nil || res.ResultReference != "the-result" {
			t.Errorf("Flight.Wait = %+v, %v; want the leader's result", res, err)
		}
	}
}

// TestGuardGate: SetCatalog waits for a decision under way (one stuck on
// the store), and a call proposed meanwhile, even one with another
// fingerprint, waits for SetCatalog and keeps its own deadline.
func TestGuardGate(t *testing.T) {
	g, st, first := stuckCall(t) // the first call is stuck on the store
	set := make(chan struct{})
	go func() {
		g.SetCatalog(preflight.DefaultCatalog())
		close(set)
	}()
	// SetCatalog is now waiting (or about to): a call with another
	// fingerprint waits for it, until its own deadline.
	for {
		g.mu.Lock()
		waiting := g.changesWaiting
		g.mu.Unlock()
		if waiting == 1 {
			break
		}
		select {
		case <-set:
			t.Fatal("SetCatalog returned while a decision was under way")
		case <-time.After(time.Millisecond):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ran := false
	_, err := g.Call(ctx, searchReq("b", "0.1"), func(context.Context) (Completion, error) { ran = true; return Completion{}, nil })
	if ran || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("behind a waiting SetCatalog: ran %v, error %v; want not run and context.DeadlineExceeded", ran, err)
	}
	select {
	case <-set:
		t.Fatal("SetCatalog returned while a decision was under way")
	default:
	}
	close(st.release)
	if err := <-first; err != nil {
		t.Errorf("the first call: %v", err)
	}
	<-set
	if _, err := g.Call(context.Background(), searchReq("c", "0.1"), func(context.Context) (Completion, error) { return Completion{}, nil }); err != nil {
		t.Errorf("a call after SetCatalog: %v", err)
	}
}

// pausedStore pauses the ReserveOf calls made while pause is set after
// they read the store: it signals read and waits for resume before it
// answers.
type pausedStore struct {
	LedgerStore
	pause  atomic.Bool
	read   chan struct{}
	resume chan struct{}
}

func (s *pausedStore) ReserveOf(ctx context.Context, r Reservation, fp string) (bool, LedgerState, error) {
	ok, st, err := s.LedgerStore.ReserveOf(ctx, r, fp)
	if s.pause.Load() {
		s.read <- struct{}{}
		<-s.resume
	}
	return ok, st, err
}

// TestGuardFlightLandsDuringDecision: an identical read-only call reads
// the history while the first one still runs, and the first one ends
// (recorded, its flight landed) before the second one is decided. The
// second one must not run: it saw the first one in flight when it read
// the history, so it waits on it (or reuses its result), as when the
// first one ends before or after the second one's decision.
func TestGuardFlightLandsDuringDecision(t *testing.T) {
	st := &pausedStore{LedgerStore: NewMemoryLedgerStore(nil), read: make(chan struct{}), resume: make(chan struct{})}
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	leader, _, err := g.Begin(context.Background(), searchReq("same", "0.1"))
	if err != nil || leader == nil {
		t.Fatalf("the first call: permit %v, error %v; want a permit", leader, err)
	}
	st.pause.Store(true)
	type answer struct {
		p   *Permit
		rep Report
		err error
	}
	second := make(chan answer, 1)
	go func() {
		p, rep, err := g.Begin(context.Background(), searchReq("same", "0.1"))
		second <- answer{p, rep, err}
	}()
	<-st.read // the second call read the history: the first one is not in it
	st.pause.Store(false)
	if _, err := leader.End(Completion{ResultReference: "the-result"}, nil); err != nil {
		t.Fatal(err)
	}
	close(st.resume)
	a := <-second
	switch {
	case a.err != nil:
		t.Fatal(a.err)
	case a.p != nil:
		a.p.Release()
		t.Fatalf("the identical call was allowed to run again (%s %v), want it to wait on the first one or reuse its result", a.rep.Decision.Verdict, a.rep.Decision.ReasonCodes)
	case a.rep.InFlight != nil:
		if res, err := a.rep.InFlight.Wait(context.Background()); err != nil || res.ResultReference != "the-result" {
			t.Errorf("Flight.Wait = %+v, %v; want the first call's result", res, err)
		}
	case a.rep.ReuseReference != "the-result":
		t.Errorf("the identical call: %s %v, reuse %q; want it in flight or reusing the first one's result", a.rep.Decision.Verdict, a.rep.Decision.ReasonCodes, a.rep.ReuseReference)
	}
	s, err := st.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Balance; b.Calls != 1 || b.SpentUSD != "0.1" || b.ReservedUSD != "0" {
		t.Errorf("balance %+v, want one call of 0.1 and nothing held", b)
	}
}

// lockState is a Guard's locking bookkeeping at one moment.
type lockState struct {
	turns, refs, busy, spare, deciding, changesWaiting int
	changing                                           bool
}

func lockStateOf(g *Guard) lockState {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := lockState{turns: len(g.turns), spare: len(g.spareTurns), deciding: g.deciding, changesWaiting: g.changesWaiting, changing: g.changing}
	for _, t := range g.turns {
		s.refs += t.refs
		if t.busy {
			s.busy++
		}
	}
	return s
}

// waitLockState waits until g's bookkeeping satisfies ok.
func waitLockState(t *testing.T, g *Guard, what string, ok func(lockState) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // not a timing claim: it would wait for ever
	for !ok(lockStateOf(g)) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %+v after 10 s", what, lockStateOf(g))
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGuardWaitersGiveUp: behind a call stuck on the store, identical
// calls waiting for their turn and other calls waiting at the gate behind
// SetCatalog all give up when their contexts end, without running and
// without leaving a turn, a place at the gate or a goroutine behind; the
// stuck call, SetCatalog and later calls then go on as usual.
func TestGuardWaitersGiveUp(t *testing.T) {
	before := runtime.NumGoroutine()
	st := stuckStore{NewMemoryLedgerStore(nil), make(chan struct{}, 64), make(chan struct{})}
	g, err := NewGuard(nil, &GuardOptions{BudgetUSD: "1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	run := func(context.Context) (Completion, error) { return Completion{ResultReference: "r"}, nil }
	first := make(chan error, 1)
	go func() {
		_, err := g.Call(context.Background(), searchReq("a", "0.1"), run)
		first <- err
	}()
	<-st.entered // the first call is deciding, stuck on the store
	const waiters = 8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Int32
	gaveUp := make(chan error, 2*waiters)
	for range waiters { // identical calls: they wait for their turn
		go func() {
			_, err := g.Call(ctx, searchReq("a", "0.1"), func(context.Context) (Completion, error) { ran.Add(1); return Completion{}, nil })
			gaveUp <- err
		}()
	}
	waitLockState(t, g, "identical calls waiting for their turn", func(s lockState) bool { return s.turns == 1 && s.refs == 1+waiters })
	set := make(chan struct{})
	go func() {
		g.SetCatalog(nil)
		close(set)
	}()
	waitLockState(t, g, "SetCatalog waiting", func(s lockState) bool { return s.changesWaiting == 1 })
	for i := range waiters { // other calls: they wait at the gate
		go func() {
			_, err := g.Call(ctx, searchReq(fmt.Sprintf("b%d", i), "0.1"), func(context.Context) (Completion, error) { ran.Add(1); return Completion{}, nil })
			gaveUp <- err
		}()
	}
	waitLockState(t, g, "other calls at the gate", func(s lockState) bool { return s.turns == 1+waiters && s.busy == 1+waiters })
	cancel()
	for range 2 * waiters {
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Errorf("a waiting call whose context ended: %v, want context.Canceled", err)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d waiting calls ran after their contexts ended", n)
	}
	if s := lockStateOf(g); s != (lockState{turns: 1, refs: 1, busy: 1, spare: waiters, deciding: 1, changesWaiting: 1}) {
		t.Errorf("after the waiting calls gave up: %+v, want only the stuck call's turn and SetCatalog waiting", s)
	}
	close(st.release)
	if err := <-first; err != nil {
		t.Errorf("the stuck call: %v", err)
	}
	<-set
	for _, q := range []string{"a", "b0"} {
		if rep, err := g.Call(context.Background(), searchReq(q, "0.1"), run); err != nil || !rep.Called && rep.ReuseReference == "" {
			t.Errorf("a call of %q afterwards: %+v, %v; want it run or reused", q, rep.Decision, err)
		}
	}
	if s := lockStateOf(g); s.turns != 0 || s.refs != 0 || s.deciding != 0 || s.changesWaiting != 0 || s.changing || s.spare > maxSpareTurns {
		t.Errorf("at rest: %+v, want no turn, no decision, no change", s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the calls, %d before", n, before)
	}
}
