package decimal

import "math/big"

// MultipleOf reports whether the JSON number x is an integer multiple of
// the JSON number m (m > 0), exactly, as JSON Schema's multipleOf asks: on
// the decimal values written, never on binary floats, so 0.3 is a multiple
// of 0.1 and 1e308 of 0.5.
//
// The cost is bounded by the digits written, not by the exponents: a
// power of ten too large to build is reduced modulo m's coefficient.
func MultipleOf(x, m string) bool {
	a, b := parseExact(x), parseExact(m)
	if a.digits() == 0 {
		return true // zero is a multiple of anything
	}
	if b.digits() == 0 {
		return false // m is positive by the schema's rule; refuse a zero anyway
	}
	// x = A × 10^sa and m = B × 10^sb with integer coefficients A and B.
	ca, _ := new(big.Int).SetString(a.hi+a.lo, 10)
	cb, _ := new(big.Int).SetString(b.hi+b.lo, 10)
	sa := a.exp - int64(a.digits())
	sb := b.exp - int64(b.digits())
	if sa >= sb {
		// x/m = A × 10^(sa-sb) / B: an integer when B divides A × 10^(sa-sb),
		// tested on 10^(sa-sb) mod B.
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(sa-sb), cb)
		p.Mul(p, ca)
		return p.Mod(p, cb).Sign() == 0
	}
	// x/m = A / (B × 10^(sb-sa)). A has no trailing zeros (parseExact trims
	// them), so 10^k divides A only for k = 0: a non-zero A with sb > sa is
	// never a multiple unless B × 10^k divides A, impossible for k ≥ 1.
	return false
}
