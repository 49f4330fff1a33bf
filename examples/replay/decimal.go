package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
)

// Money and times in a run file are exact decimals: they are read from the
// JSON number text into a math/big.Rat, added exactly and written back as
// plain decimals, so 0.1 + 0.2 is 0.3 in the report, as in preflight's own
// arithmetic. A nil *big.Rat reads as 0.

// jsonNumber is the grammar of a JSON number (RFC 8259 §6): its integer
// digits, its fraction digits and its exponent.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$`)

// maxDigits bounds the digits and the exponent of a number, and limit its
// size, so that no input can make the replay build a huge number.
const maxDigits = 1000

var limit, _ = new(big.Rat).SetString("1e30")

// parseDecimal reads JSON number text exactly.
func parseDecimal(n json.Number) (*big.Rat, error) {
	m := jsonNumber.FindStringSubmatch(string(n))
	if m == nil {
		return nil, fmt.Errorf("%q is not a JSON number", string(n))
	}
	errRange := fmt.Errorf("%q: out of range", string(n))
	if len(m[1])+len(m[2]) > maxDigits {
		return nil, errRange
	}
	if m[3] != "" {
		if exp, err := strconv.Atoi(m[3]); err != nil || exp > maxDigits || exp < -maxDigits {
			return nil, errRange
		}
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil, fmt.Errorf("%q is not a JSON number", string(n))
	}
	if new(big.Rat).Abs(r).Cmp(limit) >= 0 {
		return nil, errRange
	}
	return r, nil
}

// add returns a + b as a new number.
func add(a, b *big.Rat) *big.Rat {
	sum := new(big.Rat)
	if a != nil {
		sum.Set(a)
	}
	if b != nil {
		sum.Add(sum, b)
	}
	return sum
}

// decimalText writes r exactly, with no exponent and no trailing fraction
// zeros. r is a sum of numbers read from decimal text, so it always has a
// finite decimal expansion.
func decimalText(r *big.Rat) string {
	if r == nil {
		return "0"
	}
	digits, _ := r.FloatPrec()
	return r.FloatString(digits)
}
