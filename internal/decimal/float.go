package decimal

import "strconv"

// floatDigits is how many significant digits ParseFloat hands to
// strconv.ParseFloat: below the 800 it reads correctly, above the 767
// that deciding any rounding of a float64 can need (see ParseFloat).
const floatDigits = 780

// ParseFloat returns the float64 nearest to the JSON number text s,
// rounding half to even, with strconv.ParseFloat's errors: ErrRange and ±Inf
// beyond the float64 range, a zero for a value too small, and its syntax
// error for text that is not a JSON number.
//
// strconv.ParseFloat alone is wrong on text with more than 800
// significant digits (Go 1.26): it reads 1 followed by 800 zeros and
// e-800 as 0.1, and with 1,500 zeros as 0. ParseFloat gives it at most
// floatDigits of them. A longer text has no trailing zeros once they are
// trimmed, so its dropped digits are not all zero, and a 1 put after the
// digits kept stands for them: the value stays strictly between the
// same two neighbours of floatDigits digits. No halfway point between
// two float64s lies strictly between those, because one has at most 767
// significant digits, so the rounding is the same.
func ParseFloat(s string) (float64, error) {
	if len(s) <= floatDigits || !Valid(s) {
		return strconv.ParseFloat(s, 64) // no more digits than bytes, or its syntax error
	}
	n := parseExact(s)
	var buf [floatDigits + 32]byte
	b := buf[:0]
	if s[0] == '-' { // zero too: strconv.ParseFloat reads -0 as -0
		b = append(b, '-')
	}
	b = append(b, "0."...)
	k := min(n.digits(), floatDigits)
	for i := range k {
		b = append(b, n.digit(i))
	}
	if k == 0 {
		b = append(b, '0')
	}
	if k < n.digits() {
		b = append(b, '1')
	}
	b = append(b, 'e')
	b = strconv.AppendInt(b, n.exp, 10)
	return strconv.ParseFloat(string(b), 64)
}
