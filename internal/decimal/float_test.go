package decimal

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// floatOf is the reference for ParseFloat: the exact rational, rounded
// by math/big to the nearest float64; ok is false outside the range.
func floatOf(t testing.TB, s string) (f float64, inRange bool) {
	f, _ = rat(t, s).Float64()
	return f, !math.IsInf(f, 0)
}

func TestParseFloat(t *testing.T) {
	long := func(lead string, zeros int, tail string) string { return lead + strings.Repeat("0", zeros) + tail }
	tests := []struct {
		name string
		in   string
		want float64
	}{
		{"short", "1.5", 1.5},
		{"one with 780 zeros", long("1", 780, "e-780"), 1},
		{"one with 800 zeros", long("1", 800, "e-800"), 1},
		{"one with 801 zeros", long("1", 801, "e-801"), 1},
		{"one with 1500 zeros", long("1", 1500, "e-1500"), 1},
		{"negative, fraction zeros", "-1." + strings.Repeat("0", 2000), -1},
		{"max_results written long", long("1", 1500, "e-1500"), 1},
		{"many leading zeros", "0." + strings.Repeat("0", 2000) + "5e2001", 5},
		{"zero written long", "-0." + strings.Repeat("0", 3000), math.Copysign(0, -1)},
		{"long thirds", "0." + strings.Repeat("3", 2000), 1.0 / 3},
		{"underflow written long", long("1", 900, "e-1300"), 0},
		// Halfway between 1 and the next float64 (1 + 2^-53, exactly
		// 0.5 ulp above 1): ties to even, 1. One more digit far out tips
		// it up.
		{"halfway ties to even", "1.00000000000000011102230246251565404236316680908203125", 1},
		{"just above halfway, far out", "1.00000000000000011102230246251565404236316680908203125" + strings.Repeat("0", 1000) + "1", math.Nextafter(1, 2)},
		{"just below halfway, far out", "1.00000000000000011102230246251565404236316680908203124" + strings.Repeat("9", 1000), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFloat(tc.in)
			if err != nil || got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
				t.Errorf("ParseFloat = %v, %v; want %v", got, err, tc.want)
			}
			if ref, _ := floatOf(t, tc.in); ref != got {
				t.Errorf("big.Rat gives %v, ParseFloat %v", ref, got)
			}
		})
	}
	for _, s := range []string{long("1", 1000, ""), "-" + long("9", 2000, "")} {
		if f, err := ParseFloat(s); !math.IsInf(f, 0) || !errors.Is(err, strconv.ErrRange) {
			t.Errorf("ParseFloat(%.20s…) = %v, %v; want ±Inf and ErrRange", s, f, err)
		}
	}
}

// FuzzParseFloat holds ParseFloat to math/big's exact rounding on numbers
// of up to thousands of digits: a mantissa of the fuzzed digits, repeated
// to length, and an exponent that moves the point anywhere near the
// float64 range.
func FuzzParseFloat(f *testing.F) {
	f.Add("1", uint16(801), int16(-801), false)
	f.Add("100000000000000011102230246251565404236316680908203125", uint16(2000), int16(-53), false)
	f.Add("3", uint16(1000), int16(-1000), true)
	f.Add("17976931348623158", uint16(900), int16(-592), false)
	f.Add("4940656458412465441765687928682213723651", uint16(1200), int16(-1523), false)
	f.Fuzz(func(t *testing.T, seed string, n uint16, exp int16, neg bool) {
		var b strings.Builder
		for _, c := range []byte(seed) {
			if '0' <= c && c <= '9' {
				b.WriteByte(c)
			}
		}
		d := b.String()
		if d == "" {
			d = "1"
		}
		d = strings.TrimLeft(strings.Repeat(d, int(n%4000)/len(d)+1)[:int(n%4000)+1], "0")
		if d == "" {
			d = "0"
		}
		s := d + "e" + strconv.Itoa(int(exp%2000))
		if neg {
			s = "-" + s
		}
		want, inRange := floatOf(t, s)
		got, err := ParseFloat(s)
		if !inRange {
			if !math.IsInf(got, 0) || !errors.Is(err, strconv.ErrRange) {
				t.Fatalf("ParseFloat(%s) = %v, %v; want ±Inf, ErrRange", s, got, err)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("ParseFloat(%s) = %v, %v; big.Rat gives %v", s, got, err, want)
		}
	})
}
