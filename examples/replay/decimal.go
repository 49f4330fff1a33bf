package main

import (
	"encoding/json"

	"github.com/agentpreflight/preflight/internal/decimal"
)

// parseDecimal reads JSON number text exactly, with the module's one
// exact-decimal implementation (the one Decide uses), bounded so that no
// input can make it build a huge number.
func parseDecimal(n json.Number) (decimal.Dec, error) { return decimal.ParseBounded(string(n)) }

// decimalText writes d exactly, with no exponent and no trailing fraction
// zeros.
func decimalText(d decimal.Dec) string { return d.String() }
