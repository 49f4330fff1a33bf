package strictjson

import (
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentpreflight/preflight/internal/decimal"
)

// maxVerbatimDigits is the most significant digits a decimal may have and
// still be its own shortest round-trip text (DBL_DIG for IEEE-754 doubles).
const maxVerbatimDigits = 15

// numberStatus says why appendNumberText could not write a number.
type numberStatus uint8

const (
	numberOK       numberStatus = iota
	numberSyntax                // the text is not a JSON number
	numberTooLarge              // the value is beyond the double range
)

// appendNumberText appends the RFC 8785 form of the JSON number text s.
// It validates s against the JSON number grammar itself, so it is safe on
// hand-built values whose Str never went through Parse.
func appendNumberText(dst []byte, s string) ([]byte, numberStatus) {
	if out, ok := appendShortDecimal(dst, s); ok {
		return out, numberOK
	}
	return appendNumberSlow(dst, s)
}

// appendShortDecimal is the fast path of appendNumberText for the most
// common numbers: plain decimals (no exponent) with at most 15 significant
// digits and a magnitude of zero or at least 10^-6. Such a decimal is the
// shortest text of its nearest double (15 digits always survive a round
// trip through a double), and ECMAScript writes that range in fixed
// notation, so the canonical form is the text itself with trailing
// fraction zeros dropped. It reports false for anything else.
func appendShortDecimal(dst []byte, s string) ([]byte, bool) {
	body := s
	neg := len(body) > 0 && body[0] == '-'
	if neg {
		body = body[1:]
	}
	intPart, frac := body, ""
	for i := 0; i < len(body); i++ {
		if body[i] == '.' {
			intPart, frac = body[:i], body[i+1:]
			if frac == "" {
				return dst, false
			}
			break
		}
	}
	if intPart == "" || (intPart[0] == '0' && len(intPart) > 1) || !allDigits(intPart) || !allDigits(frac) {
		return dst, false
	}
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	sig := len(intPart) + len(frac)
	if intPart == "0" {
		zeros := 0
		for zeros < len(frac) && frac[zeros] == '0' {
			zeros++
		}
		if zeros == len(frac) {
			return append(dst, '0'), true // any spelling of zero, -0 included
		}
		if zeros > 5 {
			return dst, false // below 10^-6: exponent form
		}
		sig = len(frac) - zeros
	}
	if sig > maxVerbatimDigits {
		return dst, false
	}
	if neg {
		dst = append(dst, '-')
	}
	dst = append(dst, intPart...)
	if frac != "" {
		dst = append(dst, '.')
		dst = append(dst, frac...)
	}
	return dst, true
}

// verbatimNumber reports whether s, text that follows the JSON number
// grammar and has no exponent, is already its own RFC 8785 form: what
// appendShortDecimal would write for it unchanged. Its digits start at
// body (after any minus sign) and its decimal point is at dot, len(s) if
// it has none; the parser, which found both, passes them. That rules out
// trailing fraction zeros, -0, more than 15 significant digits and
// magnitudes below 10^-6 (and an exponent, which the parser rules out
// itself).
func verbatimNumber(s string, body, dot int) bool {
	if dot == len(s) {
		if s[body] == '0' { // the whole integer part, by the grammar
			return body == 0 // -0 is written 0
		}
		return len(s)-body <= maxVerbatimDigits
	}
	intPart, frac := s[body:dot], s[dot+1:]
	if frac[len(frac)-1] == '0' {
		return false
	}
	if intPart == "0" {
		zeros := 0
		for frac[zeros] == '0' { // ends at the last digit, which is not 0
			zeros++
		}
		return zeros <= 5 && len(frac)-zeros <= maxVerbatimDigits
	}
	return len(intPart)+len(frac) <= maxVerbatimDigits
}

// appendNumberSlow is appendNumberText without the fast path: validate,
// parse to the nearest double, format as ECMAScript does. The one
// exception is a number written as a plain integer (digits, perhaps a
// minus sign, no fraction or exponent) whose nearest double is another
// value, such as 9007199254740993 or a 64-bit identifier: it is written as
// it is, so that two different integers never share a canonical text
// (RFC 8785 would round both to one double), and canonicalizing the result
// again changes nothing.
func appendNumberSlow(dst []byte, s string) ([]byte, numberStatus) {
	if !decimal.Valid(s) {
		return dst, numberSyntax
	}
	f, err := decimal.ParseFloat(s)
	if err != nil && math.IsInf(f, 0) {
		return dst, numberTooLarge
	}
	// Any other error cannot happen for valid JSON number text; underflow
	// gives a zero with a nil error.
	var buf [24]byte
	near := shortestDigits(buf[:0], f)
	if exact, ok := integerDigits(s); ok && !sameValue(exact, near) {
		return append(dst, s...), numberOK // a JSON integer has one spelling
	}
	return appendDigits(dst, near), numberOK
}

// digits is a decimal value: -0.d1d2…dk × 10^n when neg, else 0.d1d2…dk ×
// 10^n, with d1 and dk not zero; no digits is zero.
type digits struct {
	neg    bool
	digits string
	n      int
}

func sameValue(a, b digits) bool {
	return a.neg == b.neg && a.n == b.n && a.digits == b.digits || a.digits == "" && b.digits == ""
}

// integerDigits returns the value of s when it is a plain JSON integer.
func integerDigits(s string) (d digits, ok bool) {
	t := s
	if t[0] == '-' {
		d.neg, t = true, t[1:]
	}
	if !allDigits(t) {
		return digits{}, false
	}
	d.n = len(t) // JSON integers have no leading zeros but 0 itself
	d.digits = strings.TrimRight(t, "0")
	if d.digits == "" {
		return digits{}, true // 0 and -0 are 0
	}
	return d, true
}

// shortestDigits returns the shortest decimal digits that round-trip to
// the finite f, written into buf: the result's digits alias buf.
func shortestDigits(buf []byte, f float64) digits {
	if f == 0 {
		return digits{}
	}
	// The shortest digits in the form [-]d[.ddd]e±xx, without allocating.
	var tmp [32]byte
	b := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	var d digits
	if b[0] == '-' {
		d.neg, b = true, b[1:]
	}
	e := len(b) - 1
	for b[e] != 'e' {
		e--
	}
	exp := 0
	for _, c := range b[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if b[e+1] == '-' {
		exp = -exp
	}
	buf = append(buf, b[0])
	if e > 1 {
		buf = append(buf, b[2:e]...)
	}
	d.digits, d.n = unsafe.String(unsafe.SliceData(buf), len(buf)), exp+1
	return d
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendFloat appends f as ECMAScript's Number.prototype.toString writes it
// (ECMA-262, Number::toString with radix 10), which is what RFC 8785 §3.2.2.3
// prescribes. Negative zero is written as "0". It reports false, appending
// nothing, for NaN and the infinities, which JSON cannot express.
func appendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	var buf [24]byte
	return appendDigits(dst, shortestDigits(buf[:0], f)), true
}

// appendDigits appends d in the notation Number::toString chooses for a
// value with d's digits and exponent: integer, fixed or exponent form.
func appendDigits(dst []byte, d digits) []byte {
	dig, k, n := d.digits, len(d.digits), d.n
	if k == 0 {
		return append(dst, '0')
	}
	if d.neg {
		dst = append(dst, '-')
	}
	switch {
	case k <= n && n <= 21:
		// An integer: the digits then n-k zeros.
		dst = append(dst, dig...)
		for i := k; i < n; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		// The decimal point falls inside the digits.
		dst = append(dst, dig[:n]...)
		dst = append(dst, '.')
		dst = append(dst, dig[n:]...)
	case -6 < n && n <= 0:
		// A small fraction: "0." then -n zeros then the digits.
		dst = append(dst, '0', '.')
		for i := n; i < 0; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, dig...)
	default:
		// Exponent form: d[.ddd]e±x with no exponent padding.
		dst = append(dst, dig[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, dig[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 < 0 {
			dst = append(dst, '-')
			dst = strconv.AppendInt(dst, int64(1-n), 10)
		} else {
			dst = append(dst, '+')
			dst = strconv.AppendInt(dst, int64(n-1), 10)
		}
	}
	return dst
}

// ValidNumber reports whether s is a number literal of RFC 8259's
// grammar, as a JSON text must spell it: an optional minus, an integer
// part without leading zeros, an optional fraction, an optional exponent,
// and nothing around it (no sign +, no white space).
func ValidNumber(s string) bool { return decimal.Valid(s) }
