package agent

import (
	"encoding/json"

	"github.com/agentpreflight/preflight/internal/decimal"
)

// parseUSD reads a money value exactly. The empty string is zero. Values
// are bounded as decimal.ParseBounded bounds them; preflight itself accepts
// money only up to 1,000,000,000 with at most 400 fraction digits.
func parseUSD(n json.Number) (decimal.Dec, error) {
	if n == "" {
		return decimal.Dec{}, nil
	}
	return decimal.ParseBounded(string(n))
}

// formatUSD writes d as plain decimal text with no exponent and no trailing
// fraction zeros: exactly the value, never a binary-float approximation.
func formatUSD(d decimal.Dec) json.Number { return json.Number(d.String()) }
