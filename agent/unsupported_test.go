package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

func TestGuardUnsupportedPolicy(t *testing.T) {
	typo := searchReq("x", "0.01")
	typo.Tool.Operation = "websearch" // one edit from web_search
	other := searchReq("x", "0.01")
	other.Tool.Provider, other.Tool.Operation = "maps", "geocode"
	pricey := other
	pricey.Tool.EstimatedExternalCostUSD = "1.5" // more than the budget of 1
	tests := []struct {
		name   string
		policy UnsupportedPolicy
		req    preflight.ToolCallRequest
		runs   bool
		over   bool
	}{
		{"default runs an unknown operation", RunUnsupportedUnlessSimilar, other, true, false},
		{"default does not run a typo of a known operation", RunUnsupportedUnlessSimilar, typo, false, false},
		{"RunUnsupported runs the typo", RunUnsupported, typo, true, false},
		{"SkipUnsupported runs nothing unknown", SkipUnsupported, other, false, false},
		{"over the free budget is never run", RunUnsupported, pricey, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(t, newFakeClock(), &GuardOptions{Unsupported: tt.policy})
			c := &counter{res: Completion{ResultReference: "store:1"}}
			rep, err := g.Call(context.Background(), tt.req, c.call)
			if err != nil {
				t.Fatal(err)
			}
			want := summary{Decision: preflight.VerdictAdvise, Enforcement: preflight.EnforcementAdvisory,
				Reasons: []preflight.ReasonCode{preflight.ReasonUnsupportedOperation}, Called: tt.runs, Recorded: tt.runs, OverBudget: tt.over}
			if diff := cmp.Diff(want, summarize(rep)); diff != "" {
				t.Errorf("report mismatch (-want +got):\n%s", diff)
			}
			if got := c.n() == 1; got != tt.runs {
				t.Errorf("ran %d times, want run=%v", c.n(), tt.runs)
			}
		})
	}
}

// TestGuardCatalog: a Guard decides against its catalog, so a custom
// read-only tool is reused and a side-effecting one never is.
func TestGuardCatalog(t *testing.T) {
	catalog, err := preflight.NewCatalog(
		preflight.Operation{Provider: "marketdata", Name: "get_quote", Effects: preflight.EffectsReadOnly,
			Schema: json.RawMessage(`{"type":"object","required":["symbol"]}`)},
		preflight.Operation{Provider: "email", Name: "send_email", Effects: preflight.EffectsSideEffecting},
	)
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(t, newFakeClock(), &GuardOptions{Catalog: catalog})
	call := func(provider, operation, payload string) Report {
		r := searchReq("x", "0.01")
		r.Tool.Provider, r.Tool.Operation, r.Tool.Request = provider, operation, json.RawMessage(payload)
		c := &counter{res: Completion{ResultReference: "store:" + operation}}
		rep, err := g.Call(context.Background(), r, c.call)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := call("marketdata", "get_quote", `{}`); rep.Decision.Verdict != preflight.VerdictBlock || rep.Called {
		t.Errorf("invalid quote: %+v", summarize(rep))
	}
	if rep := call("search", "web_search", `{"query":"q"}`); rep.Decision.Verdict != preflight.VerdictAdvise {
		t.Errorf("a built-in outside the Guard's catalog: %+v", summarize(rep))
	}
	for i, want := range []preflight.Verdict{preflight.VerdictAllow, preflight.VerdictReuse} {
		if rep := call("marketdata", "get_quote", `{"symbol":"ACME"}`); rep.Decision.Verdict != want {
			t.Errorf("quote %d: %+v, want %s", i, summarize(rep), want)
		}
	}
	for i := range 2 {
		rep := call("email", "send_email", `{"to":"a@example.com"}`)
		if rep.Decision.Verdict != preflight.VerdictAllow || !rep.Called {
			t.Errorf("email %d: %+v, want allow and run", i, summarize(rep))
		}
	}
}
