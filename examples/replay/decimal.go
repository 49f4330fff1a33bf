package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
)

var numberText = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE]([+-]?[0-9]+))?$`)

// parseDecimal reads JSON number text exactly; exponents beyond ±1000 are
// refused so no input can make it allocate a huge integer.
func parseDecimal(n json.Number) (*big.Rat, error) {
	m := numberText.FindStringSubmatch(string(n))
	if m == nil {
		return nil, fmt.Errorf("%q is not a number", string(n))
	}
	if e, err := strconv.Atoi(m[1]); m[1] != "" && (err != nil || e > 1000 || e < -1000) {
		return nil, fmt.Errorf("%q: exponent out of range", string(n))
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil, fmt.Errorf("%q is not a number", string(n))
	}
	return r, nil
}

// decimalText writes a sum of decimals exactly, with no exponent and no
// trailing fraction zeros: the fewest fraction digits that are exact.
func decimalText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	p, m, ten := new(big.Int).Set(r.Num()), new(big.Int), big.NewInt(10)
	for digits := 1; digits < 1000; digits++ {
		p.Mul(p, ten)
		if m.Mod(p, r.Denom()).Sign() == 0 {
			return r.FloatString(digits)
		}
	}
	return r.FloatString(1000) // not a finite decimal; cannot come from JSON numbers
}
