package redisledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/agentpreflight/preflight/internal/decimal"
)

// MaxFractionDigits is the finest amount the Redis ledger counts: money is
// held in Redis as an integer number of 10^-18 USD (attodollars), in
// decimal text of any length, so totals are exact however large they grow.
// An amount held or spent with more fraction digits (a reservation's
// amount, a settled cost) is rounded up to the next attodollar, so that
// spending is never under-counted; a limit (a budget) with more is
// refused with ErrPrecision.
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
	d, err := decimal.ParseBounded(string(n))
	if err != nil {
		return nil, false, fmt.Errorf("redisledger: amount %q: %w", string(n), err)
	}
	if d.Sign() < 0 {
		return nil, false, fmt.Errorf("redisledger: amount %q is negative", string(n))
	}
	r, ok := new(big.Rat).SetString(d.String())
	if !ok {
		return nil, false, fmt.Errorf("redisledger: amount %q is not a decimal", string(n))
	}
	r.Mul(r, new(big.Rat).SetInt(attoPerUSD))
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if rem.Sign() != 0 {
		q.Add(q, big.NewInt(1)) // r > 0 here: rounding up is away from zero
	}
	return q, rem.Sign() == 0, nil
}

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
