// Package decimal does exact arithmetic and comparison on the decimal text of
// JSON numbers, so that money and limits are judged on the values callers
// wrote rather than on their nearest binary floats.
//
// Comparison (Compare, IsInteger, FractionDigits) never allocates.
// Arithmetic (Dec) works on int64 coefficients while they fit and moves to
// math/big when they do not, so the common case of small money amounts
// allocates nothing either.
package decimal

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// Dec is an exact decimal: coefficient × 10^-scale. The zero value is 0.
// Callers bound the size of what they parse (see FractionDigits).
type Dec struct {
	small int64    // the coefficient, when big is nil
	big   *big.Int // the coefficient, when it does not fit in small
	scale int32
}

var pow10s = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// Parse converts valid JSON number text to a Dec.
func Parse(s string) Dec {
	if f, ok := parseFixed(s); ok { // the usual money text: short, no exponent
		return Dec{small: f.mant, scale: int32(f.scale)}
	}
	n := parseExact(s)
	nd := n.digits()
	if nd == 0 {
		return Dec{}
	}
	// value = 0.digits × 10^exp = digits × 10^(exp-nd)
	shift := n.exp - int64(nd)
	var d Dec
	if nd <= 18 && shift > -math.MaxInt32 && shift < 19-int64(nd) {
		var c int64
		for i := 0; i < nd; i++ {
			c = c*10 + int64(n.digit(i)-'0')
		}
		if shift >= 0 {
			c *= pow10s[shift]
		} else {
			d.scale = int32(-shift)
		}
		d.small = c
	} else {
		d.big = new(big.Int)
		d.big.SetString(n.hi+n.lo, 10)
		if shift >= 0 {
			d.big.Mul(d.big, bigPow10(shift))
		} else {
			d.scale = int32(-shift)
		}
	}
	if n.neg {
		d = d.neg()
	}
	return d
}

func bigPow10(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

func (d Dec) bigCoef() *big.Int {
	if d.big != nil {
		return d.big
	}
	return big.NewInt(d.small)
}

func (d Dec) neg() Dec {
	if d.big != nil {
		return Dec{big: new(big.Int).Neg(d.big), scale: d.scale}
	}
	if d.small == math.MinInt64 {
		return Dec{big: new(big.Int).Neg(big.NewInt(d.small)), scale: d.scale}
	}
	return Dec{small: -d.small, scale: d.scale}
}

// mulSmall returns a × b and whether it fits in an int64.
func mulSmall(a, b int64) (int64, bool) {
	neg := (a < 0) != (b < 0)
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = -ua
	}
	if b < 0 {
		ub = -ub
	}
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(lo), true
	}
	return int64(lo), true
}

// rescale returns d with the larger scale s (s >= d.scale).
func (d Dec) rescale(s int32) Dec {
	k := int64(s - d.scale)
	if k == 0 {
		return d
	}
	if d.big == nil && k < int64(len(pow10s)) {
		if c, ok := mulSmall(d.small, pow10s[k]); ok {
			return Dec{small: c, scale: s}
		}
	}
	return Dec{big: new(big.Int).Mul(d.bigCoef(), bigPow10(k)), scale: s}
}

func align(a, b Dec) (Dec, Dec) {
	switch {
	case a.scale < b.scale:
		a = a.rescale(b.scale)
	case b.scale < a.scale:
		b = b.rescale(a.scale)
	}
	return a, b
}

// Add returns a + b.
func Add(a, b Dec) Dec {
	a, b = align(a, b)
	if a.big == nil && b.big == nil {
		s := a.small + b.small
		if (s > a.small) == (b.small > 0) { // no overflow
			return Dec{small: s, scale: a.scale}
		}
	}
	return Dec{big: new(big.Int).Add(a.bigCoef(), b.bigCoef()), scale: a.scale}
}

// Sub returns a − b.
func Sub(a, b Dec) Dec { return Add(a, b.neg()) }

// Mul returns a × b.
func Mul(a, b Dec) Dec {
	if a.big == nil && b.big == nil {
		if c, ok := mulSmall(a.small, b.small); ok {
			return Dec{small: c, scale: a.scale + b.scale}
		}
	}
	return Dec{big: new(big.Int).Mul(a.bigCoef(), b.bigCoef()), scale: a.scale + b.scale}
}

// Cmp compares a and b and returns -1, 0 or +1.
func Cmp(a, b Dec) int {
	return Sub(a, b).Sign()
}

// Sign returns -1, 0 or +1.
func (d Dec) Sign() int {
	if d.big != nil {
		return d.big.Sign()
	}
	switch {
	case d.small < 0:
		return -1
	case d.small > 0:
		return 1
	}
	return 0
}

// String formats d in plain decimal notation with no exponent, no trailing
// fractional zeros and no negative zero: "0.3", "-0.002", "12".
func (d Dec) String() string {
	if d.Sign() == 0 {
		return "0"
	}
	var buf [40]byte
	return string(d.AppendText(buf[:0]))
}

// AppendText appends the text String returns to dst.
func (d Dec) AppendText(dst []byte) []byte {
	if d.Sign() == 0 {
		return append(dst, '0')
	}
	neg := d.Sign() < 0
	var tmp [24]byte
	var digits []byte
	if d.big != nil {
		digits = new(big.Int).Abs(d.big).Append(nil, 10)
	} else {
		u := uint64(d.small)
		if neg {
			u = -u
		}
		digits = strconv.AppendUint(tmp[:0], u, 10)
	}
	scale := int(d.scale)
	for scale > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		scale--
	}
	if neg {
		dst = append(dst, '-')
	}
	switch {
	case scale <= 0:
		dst = append(dst, digits...)
		for range -scale {
			dst = append(dst, '0')
		}
	case scale >= len(digits):
		dst = append(dst, '0', '.')
		for range scale - len(digits) {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[:len(digits)-scale]...)
		dst = append(dst, '.')
		dst = append(dst, digits[len(digits)-scale:]...)
	}
	return dst
}

// ParseBounded converts JSON number text to a Dec when its magnitude is
// below 1e30 and it has at most 1,000 fraction digits, so that no text
// (such as "1e999999999") can build a huge number. It is for values from
// outside the library's decoders, which bound their numbers themselves.
func ParseBounded(s string) (Dec, error) {
	if !Valid(s) {
		return Dec{}, fmt.Errorf("%q is not a JSON number", s)
	}
	if f, ok := parseFixed(s); ok {
		// The usual money text: at most 18 digits and no exponent, so at
		// most 18 fraction digits and less than 1e18 in magnitude.
		return Dec{small: f.mant, scale: int32(f.scale)}, nil
	}
	switch {
	case FractionDigits(s) > 1000 || Compare(s, "1e30") >= 0 || Compare(s, "-1e30") <= 0:
		return Dec{}, fmt.Errorf("%q: out of range", s)
	}
	return Parse(s), nil
}

// FromInt returns n as a Dec.
func FromInt(n int64) Dec { return Dec{small: n} }
