package agent

import (
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight/internal/decimal"
)

// parseUSD reads a money value exactly. The empty string is zero. Values
// are bounded (|v| < 1e30, at most 1,000 fraction digits) so that text such
// as "1e999999999" can never build a huge number; preflight itself accepts
// money only up to 1,000,000,000 with at most 400 fraction digits.
func parseUSD(n json.Number) (decimal.Dec, error) {
	s := string(n)
	switch {
	case s == "":
		return decimal.Dec{}, nil
	case !decimal.Valid(s):
		return decimal.Dec{}, fmt.Errorf("%q is not a JSON number", s)
	case decimal.FractionDigits(s) > 1000 || decimal.Compare(s, "1e30") >= 0 || decimal.Compare(s, "-1e30") <= 0:
		return decimal.Dec{}, fmt.Errorf("%q: out of range", s)
	}
	return decimal.Parse(s), nil
}

// formatUSD writes d as plain decimal text with no exponent and no trailing
// fraction zeros: exactly the value, never a binary-float approximation.
func formatUSD(d decimal.Dec) json.Number { return json.Number(d.String()) }
