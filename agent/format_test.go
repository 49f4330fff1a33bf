package agent

import (
	"encoding/json"
	"github.com/agentpreflight/preflight/internal/decimal"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFormatAge(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want json.Number
	}{
		{"zero", 0, "0"},
		{"negative is zero", -time.Second, "0"},
		{"under a millisecond", 999 * time.Microsecond, "0"},
		{"one millisecond", time.Millisecond, "0.001"},
		{"tenths", 2500 * time.Millisecond, "2.5"},
		{"whole", time.Minute, "60"},
		{"trailing zeros trimmed", 1020 * time.Millisecond, "1.02"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, formatAge(tt.d)); diff != "" {
				t.Errorf("formatAge(%v) (-want +got):\n%s", tt.d, diff)
			}
		})
	}
}

func TestMoneyRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		a, b json.Number
		sum  json.Number
	}{
		{"no float artifacts", "0.1", "0.2", "0.3"},
		{"empty is zero", "", "0.005", "0.005"},
		{"exponent form", "1e-3", "2E+1", "20.001"},
		{"whole numbers", "3", "4", "7"},
		{"many digits", "0.000000000000000000001", "1", "1.000000000000000000001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := parseUSD(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := parseUSD(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.sum, formatUSD(decimal.Add(a, b))); diff != "" {
				t.Errorf("sum (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseUSDRejects(t *testing.T) {
	for _, s := range []json.Number{"abc", "1/3", "0x10", "1e99999", ".5", "01", "1."} {
		if _, err := parseUSD(s); err == nil {
			t.Errorf("parseUSD(%q) succeeded, want an error", s)
		}
	}
}
