package tools

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

func quoteSet(t *testing.T) *Set {
	t.Helper()
	ts, err := NewSet(Spec{TTLSeconds: "60"}, Spec{
		Operation: preflight.Operation{Provider: DefaultProvider, Name: "quote", Effects: preflight.EffectsReadOnly,
			Schema: json.RawMessage(`{"type":"object","required":["symbol"]}`)},
		PriceUSD:   "0.1",
		TTLSeconds: "60",
	})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestSessionReuseCoalesceAndWithhold(t *testing.T) {
	ctx := context.Background()
	store := NewMemoryResultStore(0, 0)
	s, err := NewSession(quoteSet(t), &SessionOptions{Results: store, Guard: agent.GuardOptions{BudgetUSD: "0.25"}})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	gate := make(chan struct{})
	run := func(ctx context.Context) ([]byte, preflight.Outcome, error) {
		n := runs.Add(1)
		<-gate
		return []byte(`{"run":` + string(rune('0'+n)) + `}`), "", nil
	}
	// Three identical calls at once: one runs, two wait for it.
	var wg sync.WaitGroup
	answers := make([]Answer, 3)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"A"}`), run)
			if err != nil {
				t.Error(err)
			}
			answers[i] = a
		}()
	}
	for runs.Load() == 0 {
		// wait for the leader to start
	}
	close(gate)
	wg.Wait()
	hows := map[How]int{}
	for _, a := range answers {
		hows[a.How]++
		if string(a.Result) != `{"run":1}` {
			t.Fatalf("answer %v carries %q", a.How, a.Result)
		}
	}
	if runs.Load() != 1 || hows[HowRan] != 1 || hows[HowCoalesced]+hows[HowReused] != 2 {
		t.Fatalf("runs %d, answers %v", runs.Load(), hows)
	}
	// Reuse hands back the saved bytes.
	if a, _ := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"A"}`), run); a.How != HowReused || string(a.Result) != `{"run":1}` {
		t.Fatalf("repeat: %v %q", a.How, a.Result)
	}
	// Schema violation: withheld with a message, nothing runs.
	if a, _ := s.Call(ctx, "quote", json.RawMessage(`{}`), run); a.How != HowWithheld || a.Message == "" ||
		a.Report.Decision.ReasonCodes[0] != preflight.ReasonInvalidPayload {
		t.Fatalf("bad args: %+v", a)
	}
	// Budget: 0.25 - 0.1 leaves 0.15: one more quote, then defer.
	if a, _ := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"B"}`), run); a.How != HowRan {
		t.Fatalf("B: %v", a.How)
	}
	a, _ := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"C"}`), run)
	if a.How != HowWithheld || a.Report.Decision.ReasonCodes[0] != preflight.ReasonBudgetExceeded {
		t.Fatalf("C: %+v", a)
	}
	if runs.Load() != 2 {
		t.Fatalf("%d runs, want 2", runs.Load())
	}
	// Not an object: a *preflight.Error.
	var pe *preflight.Error
	if _, err := s.Call(ctx, "quote", json.RawMessage(`[1]`), run); !errors.As(err, &pe) {
		t.Fatalf("array arguments: %v", err)
	}
}

func TestSessionEvictedResultRunsAgain(t *testing.T) {
	ctx := context.Background()
	s, _ := NewSession(quoteSet(t), &SessionOptions{Results: NewMemoryResultStore(1, 0)})
	n := 0
	run := func(context.Context) ([]byte, preflight.Outcome, error) { n++; return []byte("r"), "", nil }
	s.Call(ctx, "quote", json.RawMessage(`{"symbol":"A"}`), run)
	s.Call(ctx, "quote", json.RawMessage(`{"symbol":"B"}`), run) // evicts A's result
	a, err := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"A"}`), run)
	if err != nil || a.How != HowRan || n != 3 {
		t.Fatalf("after eviction: %v, %v, %d runs", a.How, err, n)
	}
}

func TestSessionFailures(t *testing.T) {
	ctx := context.Background()
	s, _ := NewSession(quoteSet(t), nil)
	fail := func(context.Context) ([]byte, preflight.Outcome, error) {
		return []byte(`{"isError":true}`), preflight.OutcomeTerminalFailure, nil
	}
	if a, _ := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"X"}`), fail); a.How != HowRan || a.Outcome != preflight.OutcomeTerminalFailure {
		t.Fatalf("first failure: %+v", a)
	}
	a, _ := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"X"}`), fail)
	if a.How != HowWithheld || a.Report.Decision.ReasonCodes[0] != preflight.ReasonRetryCapReached {
		t.Fatalf("retry: %+v", a)
	}
	boom := errors.New("connection refused")
	if _, err := s.Call(ctx, "quote", json.RawMessage(`{"symbol":"Y"}`), func(context.Context) ([]byte, preflight.Outcome, error) {
		return nil, preflight.OutcomeTransientFailure, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("run error not returned: %v", err)
	}
	// An unknown tool name close to a known one is withheld (did you mean).
	if a, _ := s.Call(ctx, "quotes", nil, fail); a.How != HowWithheld {
		t.Fatalf("typo ran: %+v", a)
	}
}

// A follower does not inherit its leader's error (the leader's caller may
// have cancelled it): it decides again and runs the call itself.
func TestSessionFollowerOfFailedLeaderRuns(t *testing.T) {
	s, _ := NewSession(quoteSet(t), nil)
	started, release := make(chan struct{}), make(chan struct{})
	leaderErr := errors.New("the leader's client went away")
	var runs atomic.Int32
	go func() {
		s.Call(context.Background(), "quote", json.RawMessage(`{"symbol":"A"}`), func(context.Context) ([]byte, preflight.Outcome, error) {
			runs.Add(1)
			close(started)
			<-release
			return nil, preflight.OutcomeTransientFailure, leaderErr
		})
	}()
	<-started
	done := make(chan Answer)
	go func() {
		a, err := s.Call(context.Background(), "quote", json.RawMessage(`{"symbol":"A"}`), func(context.Context) ([]byte, preflight.Outcome, error) {
			runs.Add(1)
			return []byte("mine"), "", nil
		})
		if err != nil {
			t.Error(err)
		}
		done <- a
	}()
	time.Sleep(50 * time.Millisecond) // let the follower start waiting on the leader (it also passes if not)
	close(release)
	if a := <-done; a.How != HowRan || string(a.Result) != "mine" || runs.Load() != 2 {
		t.Fatalf("follower: %v %q, %d runs", a.How, a.Result, runs.Load())
	}
}
