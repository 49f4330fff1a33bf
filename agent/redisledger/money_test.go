package redisledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent"
)

// TestToAtto pins the amounts the ledger takes and refuses: JSON number
// text below 1e30 with at most 1,000 fraction digits, never negative,
// rounded up to the next attodollar.
func TestToAtto(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"", "0", ""},                         // no amount is zero
		{"0", "0", ""},                        //
		{"-0", "0", ""},                       // minus zero is zero, not negative
		{"0e999999999999999999999", "0", ""},  // zero whatever its exponent
		{"1", "1000000000000000000", ""},      //
		{"100e-2", "1000000000000000000", ""}, // trailing zeros of the digits
		{"1E-2", "10000000000000000", ""},     // capital E
		{"1e+2", "100000000000000000000", ""}, // explicit plus
		{"1e-18", "1", ""},                    // one attodollar
		{"1e-19", "1", ""},                    // rounded up
		{"0.0000000001e35", "10000000000000000000000000000000000000000000", ""}, // a small mantissa with a large exponent
		{"9.99e29", "999000000000000000000000000000000000000000000000", ""},     // just below the bound
		{"1e-1000", "1", ""},            // 1,000 fraction digits
		{"1e30", "", "out of range"},    // the bound
		{"-1e30", "", "out of range"},   // out of range before negative
		{"1e-1001", "", "out of range"}, // 1,001 fraction digits
		{"1e999999999999999999999", "", "out of range"},
		{"1e-999999999999999999999", "", "out of range"},
		{"-1", "", "negative"},
		{"abc", "", "not a JSON number"},
		{"01", "", "not a JSON number"},
		{"1.", "", "not a JSON number"},
		{".5", "", "not a JSON number"},
		{"1e", "", "not a JSON number"},
		{"+1", "", "not a JSON number"},
		{" 1", "", "not a JSON number"},
	} {
		got, err := toAtto(json.Number(tt.in))
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("toAtto(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("toAtto(%q) = %q, %v; want an error saying %q", tt.in, got, err, tt.err)
		}
	}
}

// TestRange: an amount of 10^12 USD or more is refused with ErrRange
// (never wrapped into the limbs): as a limit, a cost, an estimate without
// a limit and a recovered spending; under a limit such an estimate is
// simply more than the limit.
func TestRange(t *testing.T) {
	p := startRedis(t)
	s := newStore(t, p, "range", nil)
	ctx := context.Background()
	if err := s.CheckLimit("1000000000000"); !errors.Is(err, ErrRange) {
		t.Errorf("CheckLimit(1e12) = %v; want ErrRange", err)
	}
	if err := s.CheckLimit("999999999999.999999999999999999"); err != nil {
		t.Errorf("CheckLimit(1e12 - 1e-18) = %v", err)
	}
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "a", AmountUSD: "1e13"}); ok || !errors.Is(err, ErrRange) {
		t.Errorf("Reserve(1e13) without a limit = %v, %v; want ErrRange", ok, err)
	}
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "b", AmountUSD: "1e13", LimitUSD: "999999999999"}); ok || err != nil {
		t.Errorf("Reserve(1e13) under a limit = %v, %v; want false, nil", ok, err)
	}
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "c", AmountUSD: "999999999999.999999999999999999", LimitUSD: "999999999999.999999999999999999"}); !ok || err != nil {
		t.Errorf("Reserve of the largest amount = %v, %v; want true", ok, err)
	}
	if _, err := s.Settle(ctx, "c", "1000000000000", nil); !errors.Is(err, ErrRange) {
		t.Errorf("Settle(1e12) = %v; want ErrRange", err)
	}
	set, err := s.Settle(ctx, "c", "999999999999.999999999999999999", nil)
	if err != nil || set.Balance.SpentUSD != "999999999999.999999999999999999" {
		t.Errorf("Settle of the largest amount = %+v, %v", set, err)
	}
}
