package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

// These tests use the real preflight.Decide; only the tool call itself is a
// function literal, because the Guard's job is to decide whether it runs.

// searchReq is a search proposal that can be reused for 60 s under goal g1.
func searchReq(query, cost string) preflight.ToolCallRequest {
	return preflight.ToolCallRequest{
		RunID:  "run-1",
		StepID: "step-" + query,
		Tool: preflight.ToolCall{
			Provider:                 "search",
			Operation:                "web_search",
			Request:                  json.RawMessage(`{"query":` + quote(query) + `}`),
			EstimatedExternalCostUSD: json.Number(cost),
		},
		Budget:              preflight.Budget{RemainingUSD: "1"},
		Task:                &preflight.Task{GoalHash: "g1"},
		Capabilities:        &preflight.Capabilities{CanReusePriorResult: true},
		FreshnessTTLSeconds: "60",
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// counter is a tool call that counts its runs and reports a fixed result.
type counter struct {
	mu    sync.Mutex
	calls int
	res   Completion
	err   error
}

func (c *counter) call(context.Context) (Completion, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return c.res, c.err
}

func (c *counter) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func newGuard(t *testing.T, clock *fakeClock, opts *GuardOptions) *Guard {
	t.Helper()
	g, err := NewGuard(NewLedger(&LedgerOptions{Now: clock.Now}), opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// summary is the part of a Report the tests compare.
type summary struct {
	Decision       preflight.Verdict
	Enforcement    preflight.Enforcement
	Reasons        []preflight.ReasonCode
	Called         bool
	Recorded       bool
	ReuseReference string
	OverBudget     bool
}

func summarize(r Report) summary {
	s := summary{Called: r.Called, Recorded: r.Recorded, ReuseReference: r.ReuseReference, OverBudget: r.OverBudget}
	if r.Decision != nil {
		s.Decision, s.Enforcement, s.Reasons = r.Decision.Verdict, r.Decision.Enforcement, r.Decision.ReasonCodes
	}
	return s
}

func TestGuardSkipsWithoutCallingOrRecording(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, g *Guard) // prior calls that really ran
		req   func() preflight.ToolCallRequest
		opts  *GuardOptions
		want  summary
	}{
		{
			name: "block on an invalid payload",
			req:  func() preflight.ToolCallRequest { return searchReq("", "0.01") },
			want: summary{Decision: preflight.VerdictBlock, Enforcement: preflight.EnforcementSafeToSkip, Reasons: []preflight.ReasonCode{preflight.ReasonInvalidPayload}},
		},
		{
			name: "block when the retry cap is reached",
			setup: func(t *testing.T, g *Guard) {
				mustCall(t, g, searchReq("doomed", "0.01"), Completion{Outcome: preflight.OutcomeTerminalFailure}, nil)
			},
			req:  func() preflight.ToolCallRequest { return searchReq("doomed", "0.01") },
			want: summary{Decision: preflight.VerdictBlock, Enforcement: preflight.EnforcementSafeToSkip, Reasons: []preflight.ReasonCode{preflight.ReasonRetryCapReached}},
		},
		{
			name: "defer when the budget cannot afford it",
			req: func() preflight.ToolCallRequest {
				r := searchReq("pricey", "2")
				return r
			},
			want: summary{Decision: preflight.VerdictDefer, Enforcement: preflight.EnforcementSafeToSkip, Reasons: []preflight.ReasonCode{preflight.ReasonBudgetExceeded}},
		},
		{
			name: "defer when the call limit is reached",
			req: func() preflight.ToolCallRequest {
				r := searchReq("one more", "0.01")
				r.Budget.MaxToolCallsRemaining = "0"
				return r
			},
			want: summary{Decision: preflight.VerdictDefer, Enforcement: preflight.EnforcementSafeToSkip, Reasons: []preflight.ReasonCode{preflight.ReasonCallLimitReached}},
		},
		{
			name: "reuse a fresh prior result",
			setup: func(t *testing.T, g *Guard) {
				mustCall(t, g, searchReq("go generics", "0.01"), Completion{ResultReference: "store:1"}, nil)
			},
			req:  func() preflight.ToolCallRequest { return searchReq("go generics", "0.01") },
			want: summary{Decision: preflight.VerdictReuse, Enforcement: preflight.EnforcementSafeToSkip, Reasons: []preflight.ReasonCode{preflight.ReasonReuseFreshResult}, ReuseReference: "store:1"},
		},
		{
			name: "skip an unsupported operation under SkipUnsupported",
			opts: &GuardOptions{Unsupported: SkipUnsupported},
			req: func() preflight.ToolCallRequest {
				r := searchReq("x", "0.01")
				r.Tool.Provider = "maps"
				return r
			},
			want: summary{Decision: preflight.VerdictAdvise, Enforcement: preflight.EnforcementAdvisory, Reasons: []preflight.ReasonCode{preflight.ReasonUnsupportedOperation}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, newFakeClock(), tt.opts)
			if tt.setup != nil {
				tt.setup(t, g)
			}
			before := history(t, g.Ledger())
			c := &counter{res: Completion{ResultReference: "never"}}
			rep, err := g.Call(context.Background(), tt.req(), c.call)
			if err != nil {
				t.Fatalf("Call() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(rep)); diff != "" {
				t.Errorf("report mismatch (-want +got):\n%s", diff)
			}
			if c.n() != 0 {
				t.Errorf("the tool ran %d times, want 0", c.n())
			}
			if diff := cmp.Diff(before, history(t, g.Ledger())); diff != "" {
				t.Errorf("ledger changed although nothing ran (-before +after):\n%s", diff)
			}
		})
	}
}

// mustCall runs req through g with a tool returning res, err and checks it ran.
func mustCall(t *testing.T, g *Guard, req preflight.ToolCallRequest, res Completion, err error) Report {
	t.Helper()
	c := &counter{res: res, err: err}
	rep, gotErr := g.Call(context.Background(), req, c.call)
	if !errors.Is(gotErr, err) {
		t.Fatalf("Call() error = %v, want %v", gotErr, err)
	}
	if c.n() != 1 || !rep.Called {
		t.Fatalf("the tool ran %d times (Called %v), want once; decision %+v", c.n(), rep.Called, rep.Decision)
	}
	return rep
}

func TestGuardRecordsTheOutcomeItIsGiven(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		res  Completion
		err  error
		want preflight.HistoryEntry
	}{
		{"success with reference", Completion{ResultReference: "store:7", ToolCallID: "call-7"}, nil,
			preflight.HistoryEntry{ToolCallID: "call-7", Outcome: preflight.OutcomeSuccess, ResultReference: "store:7", AgeSeconds: "0", GoalHash: "g1"}},
		{"empty outcome and nil error is success", Completion{}, nil,
			preflight.HistoryEntry{ToolCallID: "step-q", Outcome: preflight.OutcomeSuccess, AgeSeconds: "0", GoalHash: "g1"}},
		{"empty outcome and an error is transient", Completion{}, boom,
			preflight.HistoryEntry{ToolCallID: "step-q", Outcome: preflight.OutcomeTransientFailure, AgeSeconds: "0", GoalHash: "g1"}},
		{"terminal as classified", Completion{Outcome: preflight.OutcomeTerminalFailure}, boom,
			preflight.HistoryEntry{ToolCallID: "step-q", Outcome: preflight.OutcomeTerminalFailure, AgeSeconds: "0", GoalHash: "g1"}},
		{"transient as classified without an error", Completion{Outcome: preflight.OutcomeTransientFailure}, nil,
			preflight.HistoryEntry{ToolCallID: "step-q", Outcome: preflight.OutcomeTransientFailure, AgeSeconds: "0", GoalHash: "g1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, newFakeClock(), nil)
			rep := mustCall(t, g, searchReq("q", "0.01"), tt.res, tt.err)
			if !rep.Recorded {
				t.Error("Recorded = false, want true")
			}
			want := tt.want
			want.Fingerprint = rep.Decision.RequestFingerprint
			if diff := cmp.Diff([]preflight.HistoryEntry{want}, history(t, g.Ledger())); diff != "" {
				t.Errorf("history mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGuardMalformedResultIsNotRecorded(t *testing.T) {
	tests := []struct {
		name string
		res  Completion
		want string
	}{
		{"unknown outcome", Completion{Outcome: "meh"}, `Outcome "meh" is not success`},
		{"bad cost", Completion{CostUSD: "-1"}, `Completion.CostUSD "-1" must be a non-negative decimal`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, newFakeClock(), nil)
			c := &counter{res: tt.res}
			rep, err := g.Call(context.Background(), searchReq("q", "0.01"), c.call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Call() error = %v, want one containing %q", err, tt.want)
			}
			if !rep.Called || rep.Recorded {
				t.Errorf("Called, Recorded = %v, %v; want true, false", rep.Called, rep.Recorded)
			}
			if h := history(t, g.Ledger()); len(h) != 0 {
				t.Errorf("History() = %v, want empty", h)
			}
		})
	}
}

func TestGuardTTLBoundary(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
		want  summary
	}{
		{"age below the TTL reuses", 59 * time.Second,
			summary{Decision: preflight.VerdictReuse, Enforcement: preflight.EnforcementSafeToSkip, Reasons: []preflight.ReasonCode{preflight.ReasonReuseFreshResult}, ReuseReference: "store:1"}},
		{"age equal to the TTL reuses", 60 * time.Second,
			summary{Decision: preflight.VerdictReuse, Enforcement: preflight.EnforcementSafeToSkip, Reasons: []preflight.ReasonCode{preflight.ReasonReuseFreshResult}, ReuseReference: "store:1"}},
		{"one millisecond past the TTL calls again", 60*time.Second + time.Millisecond,
			summary{Decision: preflight.VerdictAllow, Enforcement: preflight.EnforcementExecute, Reasons: []preflight.ReasonCode{preflight.ReasonNoProvenWaste, preflight.ReasonReuseStale}, Called: true, Recorded: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			g := newGuard(t, clock, nil)
			mustCall(t, g, searchReq("q", "0.01"), Completion{ResultReference: "store:1"}, nil)
			clock.Advance(tt.after)
			c := &counter{res: Completion{ResultReference: "store:2"}}
			rep, err := g.Call(context.Background(), searchReq("q", "0.01"), c.call)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summarize(rep)); diff != "" {
				t.Errorf("report mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGuardAdvisePolicy(t *testing.T) {
	unsupported := searchReq("x", "0.01")
	unsupported.Tool.Provider = "maps"
	pricey := searchReq("x", "1.5") // more than the budget of 1
	pricey.Tool.Provider = "maps"
	scoped := searchReq("broad", "0.6") // over half of the budget of 1
	scoped.Capabilities.CanReduceScope = true
	tests := []struct {
		name   string
		policy AdvisePolicy
		req    preflight.ToolCallRequest
		reason preflight.ReasonCode
		runs   bool
		over   bool
	}{
		{"unsupported operation runs by default", RunAdvised, unsupported, preflight.ReasonUnsupportedOperation, true, false},
		{"unsupported operation is not skipped by SkipAdvised", SkipAdvised, unsupported, preflight.ReasonUnsupportedOperation, true, false},
		{"reduce-scope advice runs by default", RunAdvised, scoped, preflight.ReasonReduceScope, true, false},
		{"reduce-scope advice skipped", SkipAdvised, scoped, preflight.ReasonReduceScope, false, false},
		{"unsupported operation over the free budget is not run", RunAdvised, pricey, preflight.ReasonUnsupportedOperation, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, newFakeClock(), &GuardOptions{Advise: tt.policy})
			c := &counter{res: Completion{ResultReference: "store:1"}}
			rep, err := g.Call(context.Background(), tt.req, c.call)
			if err != nil {
				t.Fatal(err)
			}
			want := summary{Decision: preflight.VerdictAdvise, Enforcement: preflight.EnforcementAdvisory, Reasons: []preflight.ReasonCode{tt.reason}, Called: tt.runs, Recorded: tt.runs, OverBudget: tt.over}
			if diff := cmp.Diff(want, summarize(rep)); diff != "" {
				t.Errorf("report mismatch (-want +got):\n%s", diff)
			}
			wantRuns, wantHistory := 0, 0
			if tt.runs {
				wantRuns, wantHistory = 1, 1
			}
			if c.n() != wantRuns || len(history(t, g.Ledger())) != wantHistory {
				t.Errorf("runs, history = %d, %d; want %d, %d", c.n(), len(history(t, g.Ledger())), wantRuns, wantHistory)
			}
		})
	}
}

func TestGuardCancelledContext(t *testing.T) {
	g := newGuard(t, newFakeClock(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &counter{}
	rep, err := g.Call(ctx, searchReq("q", "0.01"), c.call)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Call() error = %v, want context.Canceled", err)
	}
	if diff := cmp.Diff(summary{}, summarize(rep)); diff != "" {
		t.Errorf("report mismatch (-want +got):\n%s", diff)
	}
	if c.n() != 0 || len(history(t, g.Ledger())) != 0 {
		t.Errorf("runs, history = %d, %d; want 0, 0", c.n(), len(history(t, g.Ledger())))
	}
}

func TestGuardCancelledDuringCallIsRecordedAsClassified(t *testing.T) {
	g := newGuard(t, newFakeClock(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	rep, err := g.Call(ctx, searchReq("q", "0.01"), func(ctx context.Context) (Completion, error) {
		cancel() // the caller gives up while the tool runs
		return Completion{Outcome: preflight.OutcomeTransientFailure}, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Call() error = %v, want context.Canceled", err)
	}
	if !rep.Called || !rep.Recorded {
		t.Errorf("Called, Recorded = %v, %v; want true, true", rep.Called, rep.Recorded)
	}
	if h := history(t, g.Ledger()); len(h) != 1 || h[0].Outcome != preflight.OutcomeTransientFailure {
		t.Errorf("History() = %+v, want one transient failure", h)
	}
}

func TestGuardDecideErrorRunsNothing(t *testing.T) {
	g := newGuard(t, newFakeClock(), nil)
	req := searchReq("q", "0.01")
	req.RunID = ""
	c := &counter{}
	rep, err := g.Call(context.Background(), req, c.call)
	var perr *preflight.Error
	if !errors.As(err, &perr) || perr.Code != preflight.ErrorInvalidRequest {
		t.Fatalf("Call() error = %v, want a *preflight.Error with code invalid_request", err)
	}
	if rep.Decision != nil || c.n() != 0 || len(history(t, g.Ledger())) != 0 {
		t.Errorf("decision %v, runs %d, history %d; want nil, 0, 0", rep.Decision, c.n(), len(history(t, g.Ledger())))
	}
}

func TestGuardReservesInFlightEstimates(t *testing.T) {
	g := newGuard(t, newFakeClock(), &GuardOptions{BudgetUSD: "0.01"})
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan Report)
	go func() {
		rep, err := g.Call(context.Background(), searchReq("first", "0.006"), func(context.Context) (Completion, error) {
			close(started)
			<-release
			return Completion{ResultReference: "store:1", CostUSD: "0.004"}, nil
		})
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	<-started

	// While the first call is in flight, 0.006 of the 0.01 is reserved.
	c := &counter{}
	rep, err := g.Call(context.Background(), searchReq("second", "0.006"), c.call)
	if err != nil {
		t.Fatal(err)
	}
	want := summary{Decision: preflight.VerdictDefer, Enforcement: preflight.EnforcementSafeToSkip, Reasons: []preflight.ReasonCode{preflight.ReasonBudgetExceeded}}
	if diff := cmp.Diff(want, summarize(rep)); diff != "" {
		t.Errorf("parallel call: report mismatch (-want +got):\n%s", diff)
	}
	close(release)
	<-done

	// The first call really cost 0.004, leaving exactly 0.006.
	if diff := cmp.Diff(json.Number("0.004"), spent(t, g)); diff != "" {
		t.Errorf("SpentUSD() (-want +got):\n%s", diff)
	}
	rep = mustCall(t, g, searchReq("second", "0.006"), Completion{}, nil)
	if rep.Decision.Verdict != preflight.VerdictAllow {
		t.Errorf("after the first call: decision %s, want allow", rep.Decision.Verdict)
	}
	if diff := cmp.Diff(json.Number("0.01"), spent(t, g)); diff != "" {
		t.Errorf("SpentUSD() (-want +got):\n%s", diff)
	}
	rep, err = g.Call(context.Background(), searchReq("third", "0.000001"), c.call)
	if err != nil || rep.Decision.Verdict != preflight.VerdictDefer {
		t.Errorf("with the budget spent: decision %v, error %v; want defer", rep.Decision, err)
	}
}

func TestGuardAddsToCallerReservation(t *testing.T) {
	g := newGuard(t, newFakeClock(), nil)
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, err := g.Call(context.Background(), searchReq("first", "0.3"), func(context.Context) (Completion, error) {
			close(started)
			<-release
			return Completion{}, nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	<-started
	defer func() { close(release); <-done }()
	// Budget 1, caller reserved 0.5, in flight 0.3: 0.2 is free.
	tests := []struct {
		name string
		cost string
		want preflight.Verdict
	}{
		{"fits exactly", "0.2", preflight.VerdictAllow},
		{"just over", "0.2000001", preflight.VerdictDefer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := searchReq("second "+tt.name, tt.cost)
			req.Budget.ReservedUSD = "0.5"
			rep, err := g.Call(context.Background(), req, func(context.Context) (Completion, error) { return Completion{}, nil })
			if err != nil {
				t.Fatal(err)
			}
			if rep.Decision.Verdict != tt.want {
				t.Errorf("decision %s (%v), want %s", rep.Decision.Verdict, rep.Decision.ReasonCodes, tt.want)
			}
		})
	}
}

func TestNewGuardRejectsBadBudget(t *testing.T) {
	for _, b := range []json.Number{"-1", "ten", "1e99999"} {
		if _, err := NewGuard(nil, &GuardOptions{BudgetUSD: b}); err == nil {
			t.Errorf("NewGuard(BudgetUSD %q) succeeded, want an error", b)
		}
	}
}

// centStore is a LedgerStore that keeps limits in whole cents, as a store
// with a fixed precision does. (The Redis store, in its own module, is
// tested the same way against a real redis-server.)
type centStore struct{ LedgerStore }

func (centStore) CheckLimit(limitUSD json.Number) error {
	if i := strings.IndexByte(string(limitUSD), '.'); i >= 0 && len(limitUSD)-i-1 > 2 {
		return fmt.Errorf("limit %s has more than 2 fraction digits", limitUSD)
	}
	return nil
}

// TestNewGuardAsksTheStoreAboutTheBudget: a budget the store cannot keep
// as a limit is refused by NewGuard, naming the field, instead of failing
// every reservation later.
func TestNewGuardAsksTheStoreAboutTheBudget(t *testing.T) {
	for _, tt := range []struct {
		budget json.Number
		want   string // "" for no error
	}{
		{"25", ""},
		{"0.25", ""},
		{"0.250", ""}, // checked as the value, 0.25
		{"2.5e-1", ""},
		{"0.251", `agent: BudgetUSD "0.251" cannot be kept by the store: limit 0.251 has more than 2 fraction digits`},
		{"1e-3", `agent: BudgetUSD "1e-3" cannot be kept by the store: limit 0.001 has more than 2 fraction digits`},
	} {
		_, err := NewGuard(nil, &GuardOptions{BudgetUSD: tt.budget, Store: centStore{NewMemoryLedgerStore(nil)}})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("NewGuard(BudgetUSD %s) error %q, want %q", tt.budget, got, tt.want)
		}
	}
}

// TestGuardPanickingToolIsCharged: a tool that panicked may have reached
// its provider: its estimate is spent, not freed for another call.
func TestGuardPanickingToolIsCharged(t *testing.T) {
	g := newGuard(t, newFakeClock(), &GuardOptions{BudgetUSD: "1"})
	func() {
		defer func() { _ = recover() }()
		_, _ = g.Call(context.Background(), searchReq("q", "0.9"), func(context.Context) (Completion, error) { panic("tool crashed") })
	}()
	if spent, err := g.SpentUSD(context.Background()); err != nil || spent != "0.9" {
		t.Errorf("after a panic: spent %s, %v; want the estimate 0.9", spent, err)
	}
	rep, err := g.Call(context.Background(), searchReq("r", "0.9"), func(context.Context) (Completion, error) { return Completion{}, nil })
	if err != nil || rep.Called {
		t.Errorf("after a panic: a second 0.9 call ran (%+v, %v), want it withheld", rep.Decision, err)
	}
	if rep := mustCall(t, g, searchReq("s", "0.1"), Completion{}, nil); !rep.Called {
		t.Errorf("after a panic: 0.1 of the 0.1 left did not run: %s", rep.Decision.Verdict)
	}
}

func TestGuardParallelCallsNeverOverspend(t *testing.T) {
	g := newGuard(t, newFakeClock(), &GuardOptions{BudgetUSD: "0.05"})
	const callers = 40 // each 0.005: only 10 fit
	var wg sync.WaitGroup
	var mu sync.Mutex
	verdicts := map[preflight.Verdict]int{}
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := searchReq(fmt.Sprintf("query %d", i), "0.005")
			rep, err := g.Call(context.Background(), req, func(context.Context) (Completion, error) {
				return Completion{ResultReference: fmt.Sprintf("store:%d", i)}, nil
			})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			verdicts[rep.Decision.Verdict]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	want := map[preflight.Verdict]int{preflight.VerdictAllow: 10, preflight.VerdictDefer: 30}
	if diff := cmp.Diff(want, verdicts); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(json.Number("0.05"), spent(t, g)); diff != "" {
		t.Errorf("SpentUSD() (-want +got):\n%s", diff)
	}
	if n := len(history(t, g.Ledger())); n != 10 {
		t.Errorf("len(History()) = %d, want 10", n)
	}
}

// TestGuardSetCatalogWhileCalling: a catalog replaced while calls are
// decided (a proxy takes in a tool list while a call of the same run
// starts) is no data race: run it with -race.
func TestGuardSetCatalogWhileCalling(t *testing.T) {
	g := newGuard(t, newFakeClock(), nil)
	c := &counter{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := g.Call(context.Background(), searchReq(fmt.Sprint("q", i), "0"), c.call); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() { g.SetCatalog(preflight.DefaultCatalog()) })
	}
	wg.Wait()
	if c.n() != 8 {
		t.Fatalf("%d calls ran, want 8", c.n())
	}
}
