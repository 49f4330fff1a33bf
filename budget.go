package preflight

import (
	"encoding/json"

	"github.com/agentpreflight/preflight/internal/decimal"
)

// Fits reports whether a call with t's estimate fits b: its external plus
// model cost is no more than the free budget, RemainingUSD minus
// ReservedUSD. It is the affordability rule behind Decide's
// ReasonBudgetExceeded, for callers that must apply it to a call Decide
// does not judge by cost (an operation the catalog lacks). Empty amounts
// are zero; an amount that is not a decimal never fits (Decide refuses
// such a request).
func (b Budget) Fits(t ToolCall) bool {
	ext, err1 := decimalOrZero(t.EstimatedExternalCostUSD)
	model, err2 := decimalOrZero(t.EstimatedModelCostUSD)
	remaining, err3 := decimalOrZero(b.RemainingUSD)
	reserved, err4 := decimalOrZero(b.ReservedUSD)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return false
	}
	return affordable(decimal.Add(ext, model), remaining, reserved)
}

// affordable is the affordability rule, the one place it is written: an
// estimate fits when it is no more than the free budget, remaining minus
// reserved. Decide's rule 6 and Fits both apply it.
func affordable(estimate, remaining, reserved decimal.Dec) bool {
	return decimal.Cmp(estimate, decimal.Sub(remaining, reserved)) <= 0
}

// decimalOrZero reads n exactly; the empty string is zero.
func decimalOrZero(n json.Number) (decimal.Dec, error) {
	if n == "" {
		return decimal.Dec{}, nil
	}
	return decimal.ParseBounded(string(n))
}
