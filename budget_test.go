package preflight_test

import (
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight"
)

func TestBudgetFits(t *testing.T) {
	tests := []struct {
		name                string
		external, model     json.Number
		remaining, reserved json.Number
		want                bool
	}{
		{"nothing costs nothing", "", "", "", "", true},
		{"exactly the free budget fits", "0.30", "0.20", "1", "0.5", true},
		{"a millionth over does not", "0.300001", "0.20", "1", "0.5", false},
		{"reservations count against it", "0.1", "", "0.5", "0.45", false},
		{"no float rounding: 0.1+0.2 fits 0.3", "0.1", "0.2", "0.3", "", true},
		{"reserved beyond remaining leaves less than nothing", "0", "", "1", "2", false},
		{"an estimate that is not a decimal never fits", "abc", "", "1", "", false},
		{"a remaining that is not a decimal never fits", "0", "", "1e", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := preflight.Budget{RemainingUSD: tt.remaining, ReservedUSD: tt.reserved}
			tc := preflight.ToolCall{EstimatedExternalCostUSD: tt.external, EstimatedModelCostUSD: tt.model}
			if got := b.Fits(tc); got != tt.want {
				t.Errorf("Budget%+v.Fits(%+v) = %v, want %v", b, tc, got, tt.want)
			}
		})
	}
}

// TestBudgetFitsAgreesWithDecide holds Fits to Decide's own budget rule:
// for an operation in the catalog, Decide defers with BUDGET_EXCEEDED
// exactly when the estimate does not fit.
func TestBudgetFitsAgreesWithDecide(t *testing.T) {
	for _, est := range []json.Number{"0", "0.25", "0.5", "0.500000001", "0.75", "2"} {
		req := preflight.ToolCallRequest{
			RunID: "r", StepID: "s",
			Tool:   preflight.ToolCall{Provider: "search", Operation: "web_search", Request: json.RawMessage(`{"query":"x"}`), EstimatedExternalCostUSD: est},
			Budget: preflight.Budget{RemainingUSD: "1", ReservedUSD: "0.5"},
		}
		dec, err := preflight.Decide(&req)
		if err != nil {
			t.Fatal(err)
		}
		over := dec.ReasonCodes[0] == preflight.ReasonBudgetExceeded
		if fits := req.Budget.Fits(req.Tool); fits == over {
			t.Errorf("estimate %s: Fits = %v, but Decide's reason codes are %v", est, fits, dec.ReasonCodes)
		}
	}
}
