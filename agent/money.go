package agent

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
)

// jsonNumber is the JSON number grammar (RFC 8259 section 6).
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE]([+-]?[0-9]+))?$`)

// maxExponent bounds the exponent of a money value so that parsing text such
// as "1e999999999" can never allocate a huge integer. preflight itself
// accepts money only up to 1,000,000,000 with at most 400 fraction digits.
const maxExponent = 1000

// parseUSD reads a money value exactly. The empty string is zero.
func parseUSD(n json.Number) (*big.Rat, error) {
	if n == "" {
		return new(big.Rat), nil
	}
	m := jsonNumber.FindStringSubmatch(string(n))
	if m == nil {
		return nil, fmt.Errorf("%q is not a JSON number", string(n))
	}
	if m[1] != "" {
		e, err := strconv.Atoi(m[1])
		if err != nil || e > maxExponent || e < -maxExponent {
			return nil, fmt.Errorf("%q: exponent out of range", string(n))
		}
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil, fmt.Errorf("%q is not a decimal number", string(n))
	}
	return r, nil
}

// formatUSD writes r as plain decimal text with no exponent and no trailing
// fraction zeros: exactly the value, never a binary-float approximation.
// Every sum or difference of decimal inputs has a denominator of the form
// 2^a·5^b, so max(a, b) fraction digits are exact.
func formatUSD(r *big.Rat) json.Number {
	d := new(big.Int).Set(r.Denom())
	two, five := big.NewInt(2), big.NewInt(5)
	var a, b int
	q, m := new(big.Int), new(big.Int)
	for {
		q.QuoRem(d, two, m)
		if m.Sign() != 0 {
			break
		}
		d.Set(q)
		a++
	}
	for {
		q.QuoRem(d, five, m)
		if m.Sign() != 0 {
			break
		}
		d.Set(q)
		b++
	}
	digits := max(a, b)
	if d.Cmp(big.NewInt(1)) != 0 {
		digits = 18 // not a finite decimal; cannot come from decimal inputs
	}
	return json.Number(r.FloatString(digits))
}
