package strictjson

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rfc8785AppendixB is the number serialization table of RFC 8785 Appendix B:
// IEEE-754 bit patterns and the text ECMAScript writes for them. An empty
// want marks the patterns (NaN, Infinity) that must be rejected.
var rfc8785AppendixB = []struct {
	bits uint64
	want string
}{
	{0x0000000000000000, "0"},
	{0x8000000000000000, "0"},
	{0x0000000000000001, "5e-324"},
	{0x8000000000000001, "-5e-324"},
	{0x7fefffffffffffff, "1.7976931348623157e+308"},
	{0xffefffffffffffff, "-1.7976931348623157e+308"},
	{0x4340000000000000, "9007199254740992"},
	{0xc340000000000000, "-9007199254740992"},
	{0x4430000000000000, "295147905179352830000"},
	{0x7fffffffffffffff, ""}, // NaN
	{0x7ff0000000000000, ""}, // Infinity
	{0x44b52d02c7e14af5, "9.999999999999997e+22"},
	{0x44b52d02c7e14af6, "1e+23"},
	{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
	{0x444b1ae4d6e2ef4e, "999999999999999700000"},
	{0x444b1ae4d6e2ef4f, "999999999999999900000"},
	{0x444b1ae4d6e2ef50, "1e+21"},
	{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
	{0x3eb0c6f7a0b5ed8d, "0.000001"},
	{0x41b3de4355555553, "333333333.3333332"},
	{0x41b3de4355555554, "333333333.33333325"},
	{0x41b3de4355555555, "333333333.3333333"},
	{0x41b3de4355555556, "333333333.3333334"},
	{0x41b3de4355555557, "333333333.33333343"},
	{0xbecbf647612f3696, "-0.0000033333333333333333"},
	{0x43143ff3c1cb0959, "1424953923781206.2"},
}

func TestAppendFloatAppendixB(t *testing.T) {
	for _, tc := range rfc8785AppendixB {
		t.Run(strconv.FormatUint(tc.bits, 16), func(t *testing.T) {
			f := math.Float64frombits(tc.bits)
			got, ok := appendFloat(nil, f)
			if tc.want == "" {
				if ok {
					t.Fatalf("appendFloat(%v) = %q, want a refusal", f, got)
				}
				return
			}
			if !ok {
				t.Fatalf("appendFloat(%v) refused a finite number", f)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("appendFloat(%#016x) mismatch (-want +got):\n%s", tc.bits, diff)
			}
		})
	}
}

// TestNumberTextAppendixB sends the Appendix B values through the path real
// documents take: number text, ParseFloat, formatting. Each value is spelled
// two ways that differ from the canonical text.
func TestNumberTextAppendixB(t *testing.T) {
	for _, tc := range rfc8785AppendixB {
		if tc.want == "" {
			continue
		}
		f := math.Float64frombits(tc.bits)
		for _, text := range []string{
			strconv.FormatFloat(f, 'e', 16, 64), // 17 significant digits
			strconv.FormatFloat(f, 'E', -1, 64), // shortest, capital E
		} {
			got, st := appendNumberText(nil, text)
			if st != numberOK {
				t.Errorf("appendNumberText(%q) status %d, want ok", text, st)
				continue
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("appendNumberText(%q) mismatch (-want +got):\n%s", text, diff)
			}
		}
	}
}

func TestAppendNumberText(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string
		st   numberStatus
	}{
		{name: "small integer verbatim", text: "42", want: "42"},
		{name: "negative integer verbatim", text: "-17", want: "-17"},
		{name: "zero", text: "0", want: "0"},
		{name: "negative zero", text: "-0", want: "0"},
		{name: "negative zero fraction", text: "-0.0", want: "0"},
		{name: "zero with exponent", text: "0e10", want: "0"},
		{name: "trailing fraction zeros", text: "5.0", want: "5"},
		{name: "RFC sample 4.50", text: "4.50", want: "4.5"},
		{name: "RFC sample 2e-3", text: "2e-3", want: "0.002"},
		{name: "RFC sample 1E30", text: "1E30", want: "1e+30"},
		{name: "RFC sample 1e-27", text: "0.000000000000000000000000001", want: "1e-27"},
		{name: "RFC sample 333333333.33333329", text: "333333333.33333329", want: "333333333.3333333"},
		{name: "capital exponent", text: "1E2", want: "100"},
		{name: "explicit plus exponent", text: "1e+2", want: "100"},
		{name: "smallest fixed fraction", text: "0.000001", want: "0.000001"},
		{name: "first exponent fraction", text: "0.0000001", want: "1e-7"},
		{name: "fraction with exponent", text: "1.5e-7", want: "1.5e-7"},
		{name: "largest fixed integer", text: "1e20", want: "100000000000000000000"},
		{name: "first exponent integer", text: "1e21", want: "1e+21"},
		{name: "15 digits fast path", text: "123456789012345", want: "123456789012345"},
		{name: "16 digits exact", text: "1234567890123456", want: "1234567890123456"},
		{name: "2^53 plus one keeps its value", text: "9007199254740993", want: "9007199254740993"},
		{name: "negative 2^53 plus one keeps its value", text: "-9007199254740993", want: "-9007199254740993"},
		{name: "uint64 max keeps its value", text: "18446744073709551615", want: "18446744073709551615"},
		{name: "2^53 is a double", text: "9007199254740992", want: "9007199254740992"},
		{name: "2^64 spelled out keeps its value", text: "18446744073709551616", want: "18446744073709551616"},
		{name: "2^64 in RFC 8785 form stays", text: "18446744073709552000", want: "18446744073709552000"},
		{name: "21-digit integer keeps its value", text: "100000000000000000001", want: "100000000000000000001"},
		{name: "23-digit integer keeps its digits", text: "12345678901234567890123", want: "12345678901234567890123"},
		{name: "1e22 spelled out is its double", text: "10000000000000000000000", want: "1e+22"},
		{name: "integer with exponent rounds", text: "9007199254740993e0", want: "9007199254740992"},
		{name: "integer with fraction rounds", text: "9007199254740993.0", want: "9007199254740992"},
		{name: "underflow is zero", text: "1e-400", want: "0"},
		{name: "negative underflow is zero", text: "-1e-400", want: "0"},
		{name: "max double spelled long", text: "1.7976931348623158e308", want: "1.7976931348623157e+308"},
		{name: "overflow", text: "1e400", st: numberTooLarge},
		{name: "enormous exponent", text: "1e99999999999999999999", st: numberTooLarge},
		{name: "zero with enormous exponent", text: "0e99999999999999999999", want: "0"},
		{name: "tiny exponent", text: "-5e-99999999999999999999", want: "0"},
		{name: "400-digit integer", text: "1" + strings.Repeat("0", 400), st: numberTooLarge},
		{name: "400-digit fraction", text: "0." + strings.Repeat("0", 400) + "1", want: "0"},
		{name: "long mantissa rounds", text: "0." + strings.Repeat("3", 100), want: "0.3333333333333333"},
		// strconv.ParseFloat alone reads these as 0.1 and 0.
		{name: "one with 800 zeros and e-800", text: "1" + strings.Repeat("0", 800) + "e-800", want: "1"},
		{name: "one with 1500 zeros and e-1500", text: "1" + strings.Repeat("0", 1500) + "e-1500", want: "1"},
		{name: "long mantissa past 800 digits rounds", text: "0." + strings.Repeat("3", 2000), want: "0.3333333333333333"},
		{name: "negative overflow", text: "-1.8e308", st: numberTooLarge},
		{name: "leading zero", text: "007", st: numberSyntax},
		{name: "NaN text", text: "NaN", st: numberSyntax},
		{name: "Infinity text", text: "Infinity", st: numberSyntax},
		{name: "hex", text: "0x10", st: numberSyntax},
		{name: "underscore", text: "1_000", st: numberSyntax},
		{name: "plus sign", text: "+1", st: numberSyntax},
		{name: "bare fraction", text: ".5", st: numberSyntax},
		{name: "bare point", text: "5.", st: numberSyntax},
		{name: "bare minus", text: "-", st: numberSyntax},
		{name: "empty", text: "", st: numberSyntax},
		{name: "space", text: " 1", st: numberSyntax},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st := appendNumberText([]byte("x"), tc.text)
			if st != tc.st {
				t.Fatalf("appendNumberText(%q) status %d, want %d", tc.text, st, tc.st)
			}
			want := "x" + tc.want
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("appendNumberText(%q) mismatch (-want +got):\n%s", tc.text, diff)
			}
		})
	}
}

// TestAppendFloatRoundTrips checks, over a spread of magnitudes, that the
// canonical text parses back to the same double and that it agrees with
// strconv's shortest form wherever ECMAScript and Go spell numbers alike.
func TestAppendFloatRoundTrips(t *testing.T) {
	seeds := []float64{1, 3, 7, 1.0 / 3, math.Pi, math.E, 123.456, 0.1, 2.0 / 3}
	for _, s := range seeds {
		for exp := -330; exp <= 310; exp++ {
			for _, sign := range []float64{1, -1} {
				f := sign * s * math.Pow(10, float64(exp))
				if math.IsInf(f, 0) || f == 0 {
					continue
				}
				got, ok := appendFloat(nil, f)
				if !ok {
					t.Fatalf("appendFloat(%v) refused", f)
				}
				back, err := strconv.ParseFloat(string(got), 64)
				if err != nil || back != f {
					t.Fatalf("appendFloat(%v) = %q, which parses to %v, %v", f, got, back, err)
				}
				if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
					if want := strconv.FormatFloat(f, 'f', -1, 64); string(got) != want {
						t.Fatalf("appendFloat(%v) = %q, want %q", f, got, want)
					}
				}
			}
		}
	}
}

// TestShortDecimalAgreesWithSlowPath compares the fast path with a full
// parse-and-format on many generated decimals around its limits: 15 and 16
// significant digits, five and six leading fraction zeros, trailing zeros.
func TestShortDecimalAgreesWithSlowPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(8785, 1))
	digits := func(n int, leadNonZero bool) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		if leadNonZero && n > 0 {
			b[0] = byte('1' + rng.IntN(9))
		}
		return string(b)
	}
	fast := 0
	for range 200000 {
		var s string
		if rng.IntN(2) == 0 {
			s = "-"
		}
		if rng.IntN(3) == 0 {
			s += "0"
		} else {
			s += digits(1+rng.IntN(17), true)
		}
		if rng.IntN(4) != 0 {
			s += "." + strings.Repeat("0", rng.IntN(8)) + digits(rng.IntN(17), false) + strings.Repeat("0", rng.IntN(3))
			if strings.HasSuffix(s, ".") {
				s += "0"
			}
		}
		want, wantSt := appendNumberSlow(nil, s)
		got, gotSt := appendNumberText(nil, s)
		if string(got) != string(want) || gotSt != wantSt {
			t.Fatalf("appendNumberText(%q) = %q, %d; full parse gives %q, %d", s, got, gotSt, want, wantSt)
		}
		if _, ok := appendShortDecimal(nil, s); ok {
			fast++
		}
	}
	if fast < 50000 {
		t.Errorf("only %d of the generated decimals took the fast path; the test no longer exercises it", fast)
	}
}
