package decimal

import (
	"math"
	"strings"
)

// exactNumber is JSON number text split for exact work without allocating:
// value = ±0.d₁d₂… × 10^exp, where the digits are the virtual concatenation
// hi+lo with no leading or trailing zeros (none at all for zero).
type exactNumber struct {
	neg    bool
	hi, lo string // digits before and after the point as written, trimmed
	exp    int64
}

// exactExpClamp bounds written exponents far beyond any digit count a
// document can hold.
const exactExpClamp = 1 << 40

// parseExact splits valid JSON number text.
func parseExact(s string) exactNumber {
	var n exactNumber
	if s != "" && s[0] == '-' {
		n.neg = true
		s = s[1:]
	}
	var exp int64
	for i := 0; i < len(s); i++ {
		if s[i] != 'e' && s[i] != 'E' {
			continue
		}
		e := s[i+1:]
		s = s[:i]
		negExp := false
		if e != "" && (e[0] == '+' || e[0] == '-') {
			negExp = e[0] == '-'
			e = e[1:]
		}
		for j := 0; j < len(e); j++ {
			if exp < exactExpClamp {
				exp = exp*10 + int64(e[j]-'0')
			}
		}
		if negExp {
			exp = -exp
		}
		break
	}
	hi, lo := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			hi, lo = s[:i], s[i+1:]
			break
		}
	}
	exp += int64(len(hi))
	for hi != "" && hi[0] == '0' {
		hi = hi[1:]
		exp--
	}
	if hi == "" {
		for lo != "" && lo[0] == '0' {
			lo = lo[1:]
			exp--
		}
	}
	for lo != "" && lo[len(lo)-1] == '0' {
		lo = lo[:len(lo)-1]
	}
	if lo == "" {
		for hi != "" && hi[len(hi)-1] == '0' {
			hi = hi[:len(hi)-1]
		}
	}
	if hi == "" && lo == "" {
		return exactNumber{}
	}
	n.hi, n.lo, n.exp = hi, lo, exp
	return n
}

func (n *exactNumber) digits() int { return len(n.hi) + len(n.lo) }

func (n *exactNumber) digit(i int) byte {
	if i < len(n.hi) {
		return n.hi[i]
	}
	return n.lo[i-len(n.hi)]
}

func (n *exactNumber) sign() int {
	switch {
	case n.digits() == 0:
		return 0
	case n.neg:
		return -1
	}
	return 1
}

// isInteger reports whether n has no fractional part (1.0 and 1e2 do not).
func (n exactNumber) isInteger() bool {
	return int64(n.digits()) <= n.exp || n.digits() == 0
}

// isPlainInteger reports whether the JSON number text s has neither a
// fraction nor an exponent, like most numbers in requests.
func isPlainInteger(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// comparePlainIntegers compares two JSON integers written without fraction
// or exponent: JSON forbids leading zeros, so longer digit strings are
// larger.
func comparePlainIntegers(a, b string) int {
	na, nb := a[0] == '-', b[0] == '-'
	if na {
		a = a[1:]
	}
	if nb {
		b = b[1:]
	}
	na, nb = na && a != "0", nb && b != "0" // -0 is 0
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	c := len(a) - len(b)
	if c == 0 {
		c = strings.Compare(a, b)
	}
	switch {
	case c == 0:
		return 0
	case (c < 0) != na:
		return -1
	}
	return 1
}

// Compare compares two valid JSON numbers given as text exactly, for
// any length and exponent, and returns -1, 0 or +1. It never allocates.
func Compare(a, b string) int {
	if isPlainInteger(a) && isPlainInteger(b) {
		return comparePlainIntegers(a, b)
	}
	return compareExact(parseExact(a), parseExact(b))
}

// Number is JSON number text parsed once for repeated exact comparison.
type Number struct {
	text  string
	mant  int64 // with scale, the value when fixed is set (see parseFixed)
	scale int32
	fixed bool
}

// ParseNumber parses valid JSON number text for Cmp.
func ParseNumber(s string) Number {
	fx, ok := parseFixed(s)
	return Number{text: s, mant: fx.mant, scale: int32(fx.scale), fixed: ok}
}

// Text returns the number text n was parsed from.
func (n Number) Text() string { return n.text }

// Cmp compares n with a, exactly, in that order: -1 when n < a, 0 when
// they are equal, +1 when n > a (as Compare(n.Text(), a.Text())). Taking a
// parsed a lets a value checked against two bounds be read once.
func (n Number) Cmp(a Number) int {
	if n.fixed && a.fixed {
		if c, ok := compareFixed(fixed{n.mant, int(n.scale)}, fixed{a.mant, int(a.scale)}); ok {
			return c
		}
	}
	return Compare(n.text, a.text)
}

// fixed is a decimal written without exponent in at most 18 digits, held
// as mant / 10^scale: the form of nearly every bound and value in a schema
// check, compared here without splitting digit strings.
type fixed struct {
	mant  int64
	scale int
}

// maxFixedDigits keeps a mantissa below 10^18 < 2^63.
const maxFixedDigits = 18

// parseFixed reads valid JSON number text as fixed; ok is false when it has
// an exponent or more than maxFixedDigits digits.
func parseFixed(s string) (f fixed, ok bool) {
	i, neg := 0, false
	if s != "" && s[0] == '-' {
		i, neg = 1, true
	}
	digits, scale := 0, -1 // scale counts digits after the point once one is seen
	var m int64
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if digits++; digits > maxFixedDigits {
				return fixed{}, false
			}
			m = m*10 + int64(c-'0')
			if scale >= 0 {
				scale++
			}
		case c == '.':
			scale = 0
		default:
			return fixed{}, false // an exponent
		}
	}
	if neg {
		m = -m
	}
	return fixed{m, max(scale, 0)}, true
}

var pow10 = [maxFixedDigits + 1]int64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// scaleLimit[d] is the largest mantissa that can be multiplied by 10^d.
var scaleLimit = func() (l [maxFixedDigits + 1]int64) {
	for d, p := range pow10 {
		l[d] = math.MaxInt64 / p
	}
	return l
}()

// compareFixed compares a and b after bringing them to the same scale; ok
// is false when that would overflow an int64.
func compareFixed(a, b fixed) (c int, ok bool) {
	ma, mb := a.mant, b.mant
	switch d := a.scale - b.scale; {
	case d > 0:
		if mb, ok = scaleUp(mb, d); !ok {
			return 0, false
		}
	case d < 0:
		if ma, ok = scaleUp(ma, -d); !ok {
			return 0, false
		}
	}
	switch {
	case ma < mb:
		return -1, true
	case ma > mb:
		return 1, true
	}
	return 0, true
}

// scaleUp returns m × 10^d, or false when that does not fit an int64.
func scaleUp(m int64, d int) (int64, bool) {
	if d > maxFixedDigits {
		return 0, false
	}
	if lim := scaleLimit[d]; m > lim || m < -lim {
		return 0, false
	}
	return m * pow10[d], true
}

func compareExact(x, y exactNumber) int {
	sx, sy := x.sign(), y.sign()
	switch {
	case sx != sy:
		if sx < sy {
			return -1
		}
		return 1
	case sx == 0:
		return 0
	}
	c := 0
	switch {
	case x.exp != y.exp:
		c = 1
		if x.exp < y.exp {
			c = -1
		}
	default:
		nx, ny := x.digits(), y.digits()
		for i := 0; i < nx && i < ny && c == 0; i++ {
			dx, dy := x.digit(i), y.digit(i)
			if dx != dy {
				c = 1
				if dx < dy {
					c = -1
				}
			}
		}
		if c == 0 && nx != ny {
			// No trailing zeros: the longer one has more non-zero digits.
			c = 1
			if nx < ny {
				c = -1
			}
		}
	}
	return c * sx
}

// IsInteger reports whether the JSON number s has no fractional part (so
// 1.0 and 1e2 are integers).
func IsInteger(s string) bool { return isPlainInteger(s) || parseExact(s).isInteger() }

// FractionDigits returns how many digits after the decimal point the exact
// value of s needs (0 for integers).
func FractionDigits(s string) int64 {
	n := parseExact(s)
	if d := int64(n.digits()) - n.exp; d > 0 {
		return d
	}
	return 0
}

// Valid reports whether s is JSON number text (RFC 8259 §6). The other
// functions of this package assume it.
func Valid(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
