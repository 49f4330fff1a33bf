package decimal

import (
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// rat is the independent reference: math/big's exact rationals.
func rat(t testing.TB, s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("big.Rat cannot read %q", s)
	}
	return r
}

// numbers returns JSON number texts: edge cases plus random ones with
// fractions, exponents, signs and leading/trailing zeros.
func numbers() []string {
	nums := []string{"0", "-0", "0.0", "-0.000", "0e5", "1", "-1", "1.0", "1.5", "10", "1e1", "100e-2", "0.1", "0.10",
		"0.2", "0.3", "0.30000000000000004", "1e-7", "123456789012345678901234567890", "1e20", "-1e20", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "1000000000", "999999999.999999999", "0.000000000000000000001", "5e-324", "2.5E+3"}
	r := rand.New(rand.NewPCG(1, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		return string(b)
	}
	for range 250 {
		s := ""
		if r.IntN(3) == 0 {
			s = "-"
		}
		in := digits(1 + r.IntN(12))
		for len(in) > 1 && in[0] == '0' {
			in = in[1:]
		}
		s += in
		if r.IntN(2) == 0 {
			s += "." + digits(1+r.IntN(8))
		}
		if r.IntN(3) == 0 {
			s += "e" + []string{"", "+", "-"}[r.IntN(3)] + strconv.Itoa(r.IntN(12))
		}
		nums = append(nums, s)
	}
	return nums
}

func TestCompareAndIsIntegerAgreeWithBigRat(t *testing.T) {
	nums := numbers()
	for _, a := range nums {
		ra := rat(t, a)
		if got, want := IsInteger(a), ra.IsInt(); got != want {
			t.Errorf("IsInteger(%s) = %v, want %v", a, got, want)
		}
		for _, b := range nums {
			if got, want := Compare(a, b), ra.Cmp(rat(t, b)); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestNumberCmpAgreesWithBigRat(t *testing.T) {
	nums := append(numbers(), "0.01", "-0.5", "999999999999999999", "-999999999999999999", "0.000000000000000001",
		"1000000000000000000", "123456789.123456789", "12345678901234567.8", "0.100000000000000000")
	for _, b := range nums {
		nb, rb := ParseNumber(b), rat(t, b)
		for _, a := range nums {
			if got, want := nb.Cmp(ParseNumber(a)), rb.Cmp(rat(t, a)); got != want {
				t.Errorf("ParseNumber(%s).Cmp(%s) = %d, want %d", b, a, got, want)
			}
		}
	}
}

func TestArithmeticAgreesWithBigRat(t *testing.T) {
	nums := numbers()[:120]
	for _, a := range nums {
		for _, b := range nums {
			ra, rb := rat(t, a), rat(t, b)
			da, db := Parse(a), Parse(b)
			for _, op := range []struct {
				name string
				got  Dec
				want *big.Rat
			}{
				{"+", Add(da, db), new(big.Rat).Add(ra, rb)},
				{"-", Sub(da, db), new(big.Rat).Sub(ra, rb)},
				{"*", Mul(da, db), new(big.Rat).Mul(ra, rb)},
			} {
				if got := rat(t, op.got.String()); got.Cmp(op.want) != 0 {
					t.Fatalf("%s %s %s = %s, want %s", a, op.name, b, op.got, op.want.RatString())
				}
			}
			if got, want := Cmp(da, db), ra.Cmp(rb); got != want {
				t.Fatalf("Cmp(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"0.30": "0.3", "-0": "0", "-0.0020": "-0.002", "12": "12", "1.2e1": "12", "1e3": "1000", "1e-7": "0.0000001",
		"123456789012345678901234567890.5": "123456789012345678901234567890.5",
	} {
		if got := Parse(in).String(); got != want {
			t.Errorf("Parse(%q).String() = %q, want %q", in, got, want)
		}
	}
	if got := Add(Parse("0.1"), Parse("0.2")).String(); got != "0.3" {
		t.Errorf("0.1 + 0.2 = %s", got)
	}
	if Cmp(Add(Parse("0.1"), Parse("0.2")), Parse("0.3")) != 0 {
		t.Error("0.1 + 0.2 != 0.3")
	}
}

func TestFractionDigits(t *testing.T) {
	for in, want := range map[string]int64{"1": 0, "1.50": 1, "1e-3": 3, "12.5e1": 0, "0.000": 0, "1.25e-398": 400} {
		if got := FractionDigits(in); got != want {
			t.Errorf("FractionDigits(%s) = %d, want %d", in, got, want)
		}
	}
}

func TestSmallPathAllocatesNothing(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		Compare("19.99", "0.01")
		IsInteger("1.50")
		a, b := Parse("0.25"), Parse("0.0140")
		_ = Cmp(Sub(Mul(a, b), Parse("0.001")), Dec{})
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}

func TestValid(t *testing.T) {
	for _, s := range numbers() {
		if !Valid(s) {
			t.Errorf("Valid(%q) = false", s)
		}
	}
	for _, s := range []string{"", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x10", "1/3", "abc", "1 ", " 1", "--1", "1.5.5", "NaN"} {
		if Valid(s) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
}

func TestParseBounded(t *testing.T) {
	tests := []struct {
		in, want string // want "" means an error
	}{
		{"0", "0"}, {"12.50", "12.5"}, {"-2e2", "-200"}, {"1e29", "100000000000000000000000000000"},
		{"1e30", ""}, {"-1e30", ""}, {"1e999999999", ""}, {"1e-1001", ""}, {"abc", ""}, {"", ""}, {"01", ""},
		{"-0", "0"}, {"-0.000", "0"}, {"999999999999999999", "999999999999999999"}, {"-0.00000000000000001", "-0.00000000000000001"},
		{"9999999999999999999", "9999999999999999999"}, {"-99999999999999999999999999999.9", "-99999999999999999999999999999.9"},
		{"1.", ""}, {".5", ""}, {"-", ""}, {"1.5.5", ""}, {"+1", ""}, {"1e", ""},
	}
	for _, tt := range tests {
		d, err := ParseBounded(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseBounded(%q) = %s, want an error", tt.in, d)
		case tt.want != "" && (err != nil || d.String() != tt.want):
			t.Errorf("ParseBounded(%q) = %s, %v; want %s", tt.in, d, err, tt.want)
		}
	}
}

// FuzzParseBounded checks ParseBounded against its definition: an error
// for text that is not a JSON number or is out of range, else Parse.
func FuzzParseBounded(f *testing.F) {
	for _, s := range []string{"0", "12.50", "-2e2", "1e30", "999999999999999999", "1.", "-0.5", "1e-1001", "0.1e1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseBounded(s)
		wantErr := !Valid(s) || FractionDigits(s) > 1000 || Compare(s, "1e30") >= 0 || Compare(s, "-1e30") <= 0
		switch {
		case wantErr != (err != nil):
			t.Fatalf("ParseBounded(%q) error %v, want an error: %v", s, err, wantErr)
		case err == nil && Cmp(d, Parse(s)) != 0:
			t.Fatalf("ParseBounded(%q) = %s, want %s", s, d, Parse(s))
		}
	})
}
