// Package decimal does exact arithmetic and comparison on the decimal text of
// JSON numbers, so that money and limits are judged on the values callers
// wrote rather than on their nearest binary floats.
package decimal

import (
	"math/big"
	"strings"
)

// norm is a JSON number in normalized scientific form:
// value = sign × 0.digits × 10^exp, with digits free of leading and trailing
// zeros. Zero has empty digits.
type norm struct {
	neg    bool
	digits string
	exp    int64
}

const expClamp = 1 << 40 // far beyond any mantissa a 64 KiB document can hold

// normalize splits JSON number text. It assumes s is valid JSON number text.
func normalize(s string) norm {
	var n norm
	if strings.HasPrefix(s, "-") {
		n.neg = true
		s = s[1:]
	}
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e := s[i+1:]
		neg := false
		if e != "" && (e[0] == '+' || e[0] == '-') {
			neg = e[0] == '-'
			e = e[1:]
		}
		for _, c := range []byte(e) {
			if exp < expClamp {
				exp = exp*10 + int64(c-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	exp += int64(len(intPart))
	digits := intPart + frac
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits = digits[lead:]
	exp -= int64(lead)
	digits = strings.TrimRight(digits, "0")
	if digits == "" {
		return norm{}
	}
	n.digits = digits
	n.exp = exp
	return n
}

// Compare compares two JSON numbers given as text and returns -1, 0 or +1.
// It is exact for any length and exponent.
func Compare(a, b string) int {
	x, y := normalize(a), normalize(b)
	sx, sy := x.sign(), y.sign()
	if sx != sy {
		if sx < sy {
			return -1
		}
		return 1
	}
	if sx == 0 {
		return 0
	}
	c := compareMagnitude(x, y)
	if sx < 0 {
		return -c
	}
	return c
}

func (n norm) sign() int {
	switch {
	case n.digits == "":
		return 0
	case n.neg:
		return -1
	}
	return 1
}

func compareMagnitude(x, y norm) int {
	if x.exp != y.exp {
		if x.exp < y.exp {
			return -1
		}
		return 1
	}
	return strings.Compare(x.digits, y.digits) // equal exponents: digit strings compare as fractions
}

// IsInteger reports whether the JSON number s has no fractional part
// (so 1.0 and 1e2 are integers).
func IsInteger(s string) bool {
	n := normalize(s)
	return n.digits == "" || int64(len(n.digits)) <= n.exp
}

// FractionDigits returns how many digits after the decimal point the exact
// value of s needs (0 for integers).
func FractionDigits(s string) int64 {
	n := normalize(s)
	if d := int64(len(n.digits)) - n.exp; d > 0 {
		return d
	}
	return 0
}

// Dec is an exact decimal: coef × 10^-scale. The zero value is 0.
type Dec struct {
	coef  big.Int
	scale int32
}

// Parse converts JSON number text to a Dec. Callers bound the size of the
// input first (see FractionDigits); the exponent is used as written.
func Parse(s string) Dec {
	n := normalize(s)
	var d Dec
	if n.digits == "" {
		return d
	}
	d.coef.SetString(n.digits, 10)
	// value = 0.digits × 10^exp = digits × 10^(exp-len(digits))
	shift := n.exp - int64(len(n.digits))
	if shift >= 0 {
		d.coef.Mul(&d.coef, pow10(shift))
	} else {
		d.scale = int32(-shift)
	}
	if n.neg {
		d.coef.Neg(&d.coef)
	}
	return d
}

// MustParse is Parse for constants in code.
func MustParse(s string) Dec { return Parse(s) }

func pow10(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

func align(a, b Dec) (x, y *big.Int, scale int32) {
	x, y = new(big.Int).Set(&a.coef), new(big.Int).Set(&b.coef)
	switch {
	case a.scale < b.scale:
		x.Mul(x, pow10(int64(b.scale-a.scale)))
		scale = b.scale
	case b.scale < a.scale:
		y.Mul(y, pow10(int64(a.scale-b.scale)))
		scale = a.scale
	default:
		scale = a.scale
	}
	return x, y, scale
}

// Add returns a + b.
func Add(a, b Dec) Dec {
	x, y, s := align(a, b)
	var d Dec
	d.coef.Add(x, y)
	d.scale = s
	return d
}

// Sub returns a − b.
func Sub(a, b Dec) Dec {
	x, y, s := align(a, b)
	var d Dec
	d.coef.Sub(x, y)
	d.scale = s
	return d
}

// Mul returns a × b.
func Mul(a, b Dec) Dec {
	var d Dec
	d.coef.Mul(&a.coef, &b.coef)
	d.scale = a.scale + b.scale
	return d
}

// Cmp compares a and b and returns -1, 0 or +1.
func Cmp(a, b Dec) int {
	x, y, _ := align(a, b)
	return x.Cmp(y)
}

// Sign returns -1, 0 or +1.
func (d Dec) Sign() int { return d.coef.Sign() }

// String formats d in plain decimal notation with no exponent, no trailing
// fractional zeros and no negative zero: "0.3", "-0.002", "12".
func (d Dec) String() string {
	if d.coef.Sign() == 0 {
		return "0"
	}
	neg := d.coef.Sign() < 0
	digits := new(big.Int).Abs(&d.coef).String()
	scale := int(d.scale)
	for scale > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		scale--
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case scale <= 0:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", -scale))
	case scale >= len(digits):
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", scale-len(digits)))
		b.WriteString(digits)
	default:
		b.WriteString(digits[:len(digits)-scale])
		b.WriteByte('.')
		b.WriteString(digits[len(digits)-scale:])
	}
	return b.String()
}
