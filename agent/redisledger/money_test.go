package redisledger

import (
	"encoding/json"
	"strings"
	"testing"
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
