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
// An amount with more fraction digits is refused with ErrPrecision, never
// rounded.
const MaxFractionDigits = 18

// ErrPrecision is wrapped by the error for an amount the Redis ledger
// cannot count exactly: more than MaxFractionDigits fraction digits.
var ErrPrecision = errors.New("redisledger: more fraction digits than the ledger counts")

var atto = new(big.Int).Exp(big.NewInt(10), big.NewInt(MaxFractionDigits), nil)

// toAtto converts a non-negative decimal amount to its count of
// attodollars as decimal text. The empty string is zero.
func toAtto(n json.Number) (string, error) {
	if n == "" {
		return "0", nil
	}
	d, err := decimal.ParseBounded(string(n))
	if err != nil {
		return "", fmt.Errorf("redisledger: amount %q: %w", string(n), err)
	}
	if d.Sign() < 0 {
		return "", fmt.Errorf("redisledger: amount %q is negative", string(n))
	}
	r, ok := new(big.Rat).SetString(d.String())
	if !ok {
		return "", fmt.Errorf("redisledger: amount %q is not a decimal", string(n))
	}
	r.Mul(r, new(big.Rat).SetInt(atto))
	if !r.IsInt() {
		return "", fmt.Errorf("redisledger: amount %q has more than %d fraction digits (%w)", string(n), MaxFractionDigits, ErrPrecision)
	}
	return r.Num().String(), nil
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
