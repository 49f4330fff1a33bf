package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/agentpreflight/preflight"
)

func TestBeginEndRecordsAndSettles(t *testing.T) {
	g := newGuard(t, newFakeClock(), &GuardOptions{BudgetUSD: "1"})
	p, rep, err := g.Begin(context.Background(), searchReq("go", "0.3"))
	if err != nil || p == nil {
		t.Fatalf("Begin: permit %v, err %v, report %+v", p, err, rep)
	}
	// While p is in flight, its 0.3 is reserved: 0.8 more does not fit.
	if q, rep, _ := g.Begin(context.Background(), searchReq("rust", "0.8")); q != nil || rep.Decision.Verdict != preflight.VerdictDefer {
		t.Fatalf("a call over the unreserved budget got permit %v, decision %+v", q, rep.Decision)
	}
	rep, err = p.End(Completion{ResultReference: "r1"}, nil)
	if err != nil || !rep.Called || !rep.Recorded || rep.Completion.Outcome != preflight.OutcomeSuccess {
		t.Fatalf("End: %+v, %v", rep, err)
	}
	if got := spent(t, g); got != "0.3" {
		t.Fatalf("spent %s, want 0.3", got)
	}
	if _, err := p.End(Completion{}, nil); err == nil {
		t.Fatal("a second End succeeded")
	}
	// The recorded success is reused: no permit.
	if q, rep, _ := g.Begin(context.Background(), searchReq("go", "0.3")); q != nil || rep.ReuseReference != "r1" {
		t.Fatalf("repeat: permit %v, report %+v", q, rep)
	}
}

func TestReleaseFreesReservationAndRecordsNothing(t *testing.T) {
	g := newGuard(t, newFakeClock(), &GuardOptions{BudgetUSD: "1", MaxCalls: 1})
	p, _, _ := g.Begin(context.Background(), searchReq("go", "0.9"))
	if p == nil {
		t.Fatal("no permit")
	}
	p.Release()
	p.Release() // idempotent
	if len(history(t, g.Ledger())) != 0 || spent(t, g) != "0" {
		t.Fatalf("release recorded or spent: %v %s", history(t, g.Ledger()), spent(t, g))
	}
	// MaxCalls counts the released permit.
	q, rep, _ := g.Begin(context.Background(), searchReq("rust", "0.9"))
	if q != nil || rep.Decision.ReasonCodes[0] != preflight.ReasonCallLimitReached {
		t.Fatalf("second call under MaxCalls 1: permit %v, %+v", q, rep.Decision)
	}
}

func TestCoalescing(t *testing.T) {
	tests := []struct {
		name     string
		opts     *GuardOptions
		mutate   func(*preflight.ToolCallRequest)
		coalesce bool
	}{
		{"read-only, reuse allowed", nil, nil, true},
		{"turned off", &GuardOptions{NoCoalesce: true}, nil, false},
		{"reuse not allowed", nil, func(r *preflight.ToolCallRequest) { r.Capabilities = nil }, false},
		{"side-effecting operation", &GuardOptions{Catalog: sideEffectingCatalog(t)}, func(r *preflight.ToolCallRequest) {
			r.Tool.Provider, r.Tool.Operation = "mail", "send"
			r.Tool.Request = []byte(`{"to":"a@example.com"}`)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, newFakeClock(), tt.opts)
			req := searchReq("go", "0.01")
			if tt.mutate != nil {
				tt.mutate(&req)
			}
			lead, _, _ := g.Begin(context.Background(), req)
			if lead == nil {
				t.Fatal("no permit for the first call")
			}
			follow, rep, _ := g.Begin(context.Background(), req)
			if got := rep.InFlight != nil; got != tt.coalesce {
				t.Fatalf("coalesced %v, want %v (permit %v)", got, tt.coalesce, follow)
			}
			if !tt.coalesce {
				if follow == nil {
					t.Fatalf("the second call was not allowed: %+v", rep.Decision)
				}
				follow.Release()
				lead.Release()
				return
			}
			done := make(chan Completion)
			go func() {
				res, err := rep.InFlight.Wait(context.Background())
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			lead.End(Completion{ResultReference: "shared"}, nil)
			if res := <-done; res.ResultReference != "shared" || res.Outcome != preflight.OutcomeSuccess {
				t.Fatalf("follower got %+v", res)
			}
			// A released leader tells its followers it did not run.
			lead2, _, _ := g.Begin(context.Background(), searchReq("other", "0.01"))
			_, rep2, _ := g.Begin(context.Background(), searchReq("other", "0.01"))
			lead2.Release()
			if _, err := rep2.InFlight.Wait(context.Background()); !errors.Is(err, ErrNotRun) {
				t.Fatalf("wait on a released leader: %v", err)
			}
		})
	}
}

func sideEffectingCatalog(t *testing.T) *preflight.Catalog {
	t.Helper()
	c, err := preflight.NewCatalog(preflight.Operation{Provider: "mail", Name: "send", Effects: preflight.EffectsSideEffecting})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
