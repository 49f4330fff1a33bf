package redisledger

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// FuzzAmount: any text either converts to attodollars that convert back
// to the same value rounded up to the next attodollar, or is refused; it
// never panics. exactAtto gives the same count when no rounding was needed
// and refuses with ErrPrecision otherwise.
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
		if !ok || !ok2 {
			t.Fatalf("%q -> %q -> %q: not a number", s, atto, back)
		}
		// want <= got < want + 10^-18
		up := new(big.Rat).Add(want, new(big.Rat).SetFrac(big.NewInt(1), attoPerUSD))
		if got.Cmp(want) < 0 || got.Cmp(up) >= 0 {
			t.Fatalf("%q -> %q -> %q: not rounded up to the next attodollar", s, atto, back)
		}
		exact, err := exactAtto(json.Number(s))
		switch {
		case got.Cmp(want) == 0 && (err != nil || exact != atto):
			t.Fatalf("exactAtto(%q) = %q, %v; want %q", s, exact, err, atto)
		case got.Cmp(want) != 0 && !errors.Is(err, ErrPrecision):
			t.Fatalf("exactAtto(%q) = %q, %v; want ErrPrecision", s, exact, err)
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

// FuzzLimbs: limbsOf, whose plain decimals skip big numbers, gives the
// limbs (or the refusal) of the general path (toAtto or exactAtto, then
// toLimbs), and fromLimbs turns them back into fromAtto's text.
func FuzzLimbs(f *testing.F) {
	for _, s := range []string{"0", "1", "0.5", "0.01", "999999999999.999999999999999999", "999999999999.9999999999999999991", "1000000000000", "12.345678901234567890", "0.0000000000000000001", "01", "1.", ".5", "-1", "1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, exact := range []bool{false, true} {
			hi, lo, err := limbsOf(json.Number(s), exact)
			conv := toAtto
			if exact {
				conv = exactAtto
			}
			var whi, wlo, atto string
			atto, werr := conv(json.Number(s))
			if werr == nil {
				whi, wlo, werr = toLimbs(atto)
			}
			if (err == nil) != (werr == nil) || hi != whi || lo != wlo {
				t.Fatalf("limbsOf(%q, %v) = %q %q %v; the general path: %q %q %v", s, exact, hi, lo, err, whi, wlo, werr)
			}
			if err != nil {
				continue
			}
			got, err := fromLimbs(hi, lo)
			want, werr := fromAtto(atto)
			if err != nil || werr != nil || got != want {
				t.Fatalf("fromLimbs(%q, %q) = %q, %v; fromAtto(%q) = %q, %v", hi, lo, got, err, atto, want, werr)
			}
		}
	})
}

// FuzzDecodeHead checks that decodeHead never panics on a reply of any
// bytes, and reads back what a script packs (see head in scripts.go).
func FuzzDecodeHead(f *testing.F) {
	f.Add("e1", int64(3), int64(5), "tail", []byte{})
	f.Add("", int64(0), int64(-1), "", []byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, epoch string, a, b int64, tail string, raw []byte) {
		_, _, _, _ = decodeHead(string(raw))
		a, b = a%(1<<53), b%(1<<53)
		p := packer{}.str(epoch)
		want := [10]int64{a, b, 0, 1, 2, 3, a, b, -1, 7}
		for _, n := range want {
			p = p.num(n)
		}
		p = append(p, tail...)
		e, nums, rest, err := decodeHead(string(p))
		if err != nil || e != epoch || nums != want || rest != tail {
			t.Fatalf("decodeHead(pack(%q, %v, %q)) = %q, %v, %q, %v", epoch, want, tail, e, nums, rest, err)
		}
		if _, _, _, err := decodeHead(string(p[:len(p)-len(tail)-1])); err == nil {
			t.Fatalf("decodeHead of a reply one byte short: no error")
		}
	})
}
