package redisledger

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// FuzzAmount: any text either converts to attodollars that convert back
// to the same value, or is refused; it never panics and never rounds.
func FuzzAmount(f *testing.F) {
	for _, s := range []string{"0", "1", "0.5", "1e-18", "1e-19", "12.345678901234567890", "-1", "1e29", "abc", "", "0.000000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		atto, err := toAtto(json.Number(s))
		if err != nil {
			return
		}
		back, err := fromAtto(atto)
		if err != nil {
			t.Fatalf("fromAtto(%q) from %q: %v", atto, s, err)
		}
		want, ok := new(big.Rat).SetString(s)
		if s == "" || !ok && zeroMantissa(s) {
			// big.Rat refuses an exponent past its range even on a
			// zero mantissa, such as "0E100000000000000000000"; the
			// value is zero all the same.
			want, ok = new(big.Rat), true
		}
		got, ok2 := new(big.Rat).SetString(string(back))
		if !ok || !ok2 || want.Cmp(got) != 0 {
			t.Fatalf("%q -> %q -> %q: value changed", s, atto, back)
		}
	})
}

// zeroMantissa reports whether the digits of a number's text before its
// exponent are all zero.
func zeroMantissa(s string) bool {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(s, "-")
	return s != "" && strings.Trim(s, "0.") == ""
}
