package redisledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// MaxFractionDigits is the finest amount the Redis ledger counts: money is
// held in Redis as an integer number of 10^-18 USD (attodollars), exactly,
// below 10^12 USD per amount (ErrRange). An amount held or spent with more
// fraction digits (a reservation's amount, a settled cost) is rounded up
// to the next attodollar, so that spending is never under-counted; a
// limit (a budget) with more is refused with ErrPrecision.
const MaxFractionDigits = 18

// ErrPrecision is wrapped by the error for a limit (a budget) the Redis
// ledger cannot represent exactly: more than MaxFractionDigits fraction
// digits. See [Store.CheckLimit].
var ErrPrecision = errors.New("redisledger: more fraction digits than the ledger counts")

var attoPerUSD = new(big.Int).Exp(big.NewInt(10), big.NewInt(MaxFractionDigits), nil)

// toAtto converts a non-negative decimal amount to its count of
// attodollars as decimal text, rounded up when the amount has more than
// MaxFractionDigits fraction digits. The empty string is zero.
func toAtto(n json.Number) (string, error) {
	q, _, err := attodollars(n)
	if err != nil {
		return "", err
	}
	return q.String(), nil
}

// exactAtto is toAtto without rounding: an amount with more than
// MaxFractionDigits fraction digits is refused with an error wrapping
// ErrPrecision.
func exactAtto(n json.Number) (string, error) {
	q, exact, err := attodollars(n)
	if err != nil {
		return "", err
	}
	if !exact {
		return "", fmt.Errorf("redisledger: amount %q has more than %d fraction digits; the Redis ledger counts at most %d (%w)", string(n), MaxFractionDigits, MaxFractionDigits, ErrPrecision)
	}
	return q.String(), nil
}

// attodollars returns n in attodollars, rounded up, and whether that is
// exact.
func attodollars(n json.Number) (*big.Int, bool, error) {
	if n == "" {
		return new(big.Int), true, nil
	}
	neg, coef, exp, err := parseAmount(string(n))
	if err != nil {
		return nil, false, fmt.Errorf("redisledger: amount %q: %w", string(n), err)
	}
	if neg {
		return nil, false, fmt.Errorf("redisledger: amount %q is negative", string(n))
	}
	q := new(big.Int)
	if coef == "" {
		return q, true, nil
	}
	q.SetString(coef, 10)
	shift := exp + MaxFractionDigits
	if shift >= 0 {
		return q.Mul(q, pow10(shift)), true, nil
	}
	q, rem := q.QuoRem(q, pow10(-shift), new(big.Int))
	if rem.Sign() != 0 {
		q.Add(q, big.NewInt(1)) // the amount is positive: rounding up is away from zero
	}
	return q, rem.Sign() == 0, nil
}

// Bounds of an amount the ledger takes: below maxDigits integer digits
// (1e30) and at most maxFraction fraction digits, so that no text (such as
// "1e999999999") builds a huge number.
const (
	maxDigits   = 30
	maxFraction = 1000
)

// parseAmount reads JSON number text (RFC 8259 §6) as its sign and the
// value coef × 10^exp, coef its significant digits without leading or
// trailing zeros (empty for zero, whatever the exponent). A value of
// 1e30 or more in magnitude, or with more than 1,000 fraction digits, is
// out of range.
func parseAmount(s string) (neg bool, coef string, exp int64, err error) {
	notNumber := fmt.Errorf("%q is not a JSON number", s)
	rest := s
	if strings.HasPrefix(rest, "-") {
		neg, rest = true, rest[1:]
	}
	digits := func() string {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		d := rest[:i]
		rest = rest[i:]
		return d
	}
	whole := digits()
	if whole == "" || len(whole) > 1 && whole[0] == '0' {
		return false, "", 0, notNumber
	}
	var frac string
	if strings.HasPrefix(rest, ".") {
		rest = rest[1:]
		if frac = digits(); frac == "" {
			return false, "", 0, notNumber
		}
	}
	var e int64
	if rest != "" && (rest[0] == 'e' || rest[0] == 'E') {
		rest = rest[1:]
		sign := ""
		if rest != "" && (rest[0] == '+' || rest[0] == '-') {
			sign, rest = rest[:1], rest[1:]
		}
		ed := digits()
		if ed == "" {
			return false, "", 0, notNumber
		}
		if e, err = strconv.ParseInt(sign+ed, 10, 64); err != nil {
			e = math.MaxInt64 // too large either way: out of range below unless the value is zero
			if sign == "-" {
				e = math.MinInt64
			}
		}
	}
	if rest != "" {
		return false, "", 0, notNumber
	}
	coef = strings.TrimLeft(whole+frac, "0")
	trimmed := strings.TrimRight(coef, "0")
	if trimmed == "" {
		return false, "", 0, nil // zero, "-0" included
	}
	// Bound the exponent before any arithmetic on it: past these the value
	// is out of range whatever its digits (fewer than len(s) of them).
	if n := int64(len(s)); e > maxDigits+n || e < -(maxFraction+n) {
		return false, "", 0, fmt.Errorf("%q: out of range", s)
	}
	exp = e - int64(len(frac)) + int64(len(coef)-len(trimmed))
	if int64(len(trimmed))+exp > maxDigits || -exp > maxFraction {
		return false, "", 0, fmt.Errorf("%q: out of range", s)
	}
	return neg, trimmed, exp, nil
}

// pow10 is 10^n.
func pow10(n int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil) }

// fromAtto converts a count of attodollars back to plain decimal text
// with no trailing fraction zeros.
func fromAtto(s string) (json.Number, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return "", fmt.Errorf("redisledger: %q in Redis is not a count of attodollars", s)
	}
	s = strings.TrimLeft(s, "0")
	if len(s) <= MaxFractionDigits {
		s = strings.Repeat("0", MaxFractionDigits+1-len(s)) + s
	}
	whole, frac := s[:len(s)-MaxFractionDigits], strings.TrimRight(s[len(s)-MaxFractionDigits:], "0")
	if frac == "" {
		return json.Number(whole), nil
	}
	return json.Number(whole + "." + frac), nil
}

// Money crosses to Redis and is kept there as two integer limbs, hi and
// lo, worth hi×10^15 + lo attodollars with 0 ≤ lo < 10^15: each limb, and
// the sum of two, is an integer below 2^53, exact in Lua's numbers (doubles),
// so the scripts add and compare amounts with a few arithmetic operations.
// One amount (an estimate, a cost, a limit) must be below 10^12 USD (hi
// below 10^15); the scripts refuse a total whose hi would reach 2^52
// (about 4.5×10^12 USD) rather than lose a digit.
const maxLimbHi = 1_000_000_000_000_000 // 10^15: one amount is below 10^12 USD

var limbBase = big.NewInt(1_000_000_000_000_000)

// ErrRange is wrapped by the error for an amount of 10^12 USD or more,
// which the Redis ledger does not count: a budget (refused when the Guard
// is built, see [Store.CheckLimit]), a cost to settle, an estimate
// reserved without a limit, a spending given to [Store.Recover]. An
// estimate of 10^12 USD or more under a limit is not an error: it is
// more than the limit and not held. The scripts refuse, rather than
// round, a total that would reach about 4.5×10^12 USD.
var ErrRange = errors.New("redisledger: amount beyond the ledger's range")

// toLimbs splits a count of attodollars (decimal text) into its limbs.
func toLimbs(atto string) (hi, lo string, err error) {
	q, ok := new(big.Int).SetString(atto, 10)
	if !ok || q.Sign() < 0 {
		return "", "", fmt.Errorf("redisledger: %q is not a count of attodollars", atto)
	}
	h, l := new(big.Int).QuoRem(q, limbBase, new(big.Int))
	if !h.IsInt64() || h.Int64() >= maxLimbHi {
		usd, _ := fromAtto(atto)
		return "", "", fmt.Errorf("redisledger: amount %s USD: the Redis ledger counts amounts below 10^12 USD (%w)", usd, ErrRange)
	}
	return h.String(), l.String(), nil
}

// limbsOf converts amount n to its limbs: rounded up to the next
// attodollar past MaxFractionDigits fraction digits, or, with exact,
// refused then (ErrPrecision). Plain decimals of at most 12 integer
// digits (every amount the Guard passes) take a path without big
// numbers; the rest go through toAtto or exactAtto and toLimbs.
func limbsOf(n json.Number, exact bool) (hi, lo string, err error) {
	if h, l, ok := plainLimbs(string(n), exact); ok {
		return strconv.FormatInt(h, 10), strconv.FormatInt(l, 10), nil
	}
	var atto string
	if exact {
		atto, err = exactAtto(n)
	} else {
		atto, err = toAtto(n)
	}
	if err != nil {
		return "", "", err
	}
	return toLimbs(atto)
}

// plainLimbs is limbsOf for text of digits, optionally a point and 1 to
// 40 digits, with 1 to 12 integer digits and no leading zero; ok is false
// for any other text, and for an inexact amount with exact.
func plainLimbs(s string, exact bool) (hi, lo int64, ok bool) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 12 || len(whole) > 1 && whole[0] == '0' || dot && frac == "" || len(frac) > 40 {
		return 0, 0, false
	}
	var w, f int64
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		w = w*10 + int64(c-'0')
	}
	up := false
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		if i < MaxFractionDigits {
			f = f*10 + int64(c-'0')
		} else if c != '0' {
			up = true
		}
	}
	for i := len(frac); i < MaxFractionDigits; i++ {
		f *= 10
	}
	const perUSD = 1_000_000_000_000_000_000
	if up {
		if exact {
			return 0, 0, false
		}
		if f++; f == perUSD {
			f, w = 0, w+1
		}
	}
	if w >= 1_000_000_000_000 {
		return 0, 0, false
	}
	return w*1000 + f/maxLimbHi, f % maxLimbHi, true
}

// limbInt reads one limb as a script returns it (an integer reply).
func limbInt(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return strconv.ParseInt(fmt.Sprint(v), 10, 64)
}

// fromLimbs converts limbs as a script returns them back to decimal USD.
func fromLimbs(hi, lo any) (json.Number, error) {
	h, err1 := limbInt(hi)
	l, err2 := limbInt(lo)
	if err1 != nil || err2 != nil || h < 0 || l < 0 || l >= maxLimbHi || h >= 1<<53 {
		return "", fmt.Errorf("redisledger: money %v %v in Redis is not a pair of limbs", hi, lo)
	}
	whole, f := strconv.FormatInt(h/1000, 10), (h%1000)*maxLimbHi+l
	if f == 0 {
		return json.Number(whole), nil
	}
	frac := strconv.FormatInt(f, 10)
	frac = strings.Repeat("0", MaxFractionDigits-len(frac)) + strings.TrimRight(frac, "0")
	return json.Number(whole + "." + frac), nil
}
