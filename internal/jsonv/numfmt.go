package jsonv

import (
	"math"
	"strconv"

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
// grammar, is already its own RFC 8785 form: what appendShortDecimal would
// write for it unchanged. That rules out exponents, trailing fraction
// zeros, -0, more than 15 significant digits and magnitudes below 10^-6.
func verbatimNumber(s string) bool {
	body := s
	if body[0] == '-' {
		body = body[1:]
	}
	dot := -1
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '.':
			dot = i
		case 'e', 'E':
			return false
		}
	}
	if dot < 0 {
		if body == "0" {
			return len(s) == 1 // -0 is written 0
		}
		return len(body) <= maxVerbatimDigits
	}
	intPart, frac := body[:dot], body[dot+1:]
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
// parse to the nearest double, format as ECMAScript does.
func appendNumberSlow(dst []byte, s string) ([]byte, numberStatus) {
	if !decimal.Valid(s) {
		return dst, numberSyntax
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && math.IsInf(f, 0) {
		return dst, numberTooLarge
	}
	// Any other error cannot happen for valid JSON number text; underflow
	// gives a zero with a nil error.
	dst, _ = appendFloat(dst, f) // f is finite here
	return dst, numberOK
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
	if f == 0 {
		return append(dst, '0'), true
	}
	// The shortest decimal digits that round-trip, in the form
	// [-]d[.ddd]e±xx, without allocating.
	var tmp [32]byte
	b := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
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
	// Gather the significant digits without the decimal point.
	var digBuf [20]byte
	dig := append(digBuf[:0], b[0])
	if e > 1 {
		dig = append(dig, b[2:e]...)
	}
	k := len(dig) // number of significant digits
	n := exp + 1  // the value is 0.d1d2...dk × 10^n
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
	return dst, true
}
