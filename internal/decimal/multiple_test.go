package decimal

import "testing"

func TestMultipleOf(t *testing.T) {
	for _, tc := range []struct {
		x, m string
		want bool
	}{
		{"10", "2", true}, {"7", "2", false}, {"0.3", "0.1", true}, {"0.35", "0.1", false},
		{"4.5", "1.5", true}, {"0", "7", true}, {"-0.0", "0.5", true}, {"1e308", "0.5", true},
		{"1e308", "3", false}, {"1e999999999", "0.5", true}, {"0.0075", "0.0001", true},
		{"0.00751", "0.0001", false}, {"12391239123", "1e-8", true}, {"-6", "3", true},
		{"1", "1e-400", true}, {"1e-400", "1", false}, {"2E1", "3", false}, {"2E1", "4", true}, {"4e1", "8", true},
		{"19.99", "0.01", true}, {"1.000", "0.5", true},
	} {
		if got := MultipleOf(tc.x, tc.m); got != tc.want {
			t.Errorf("MultipleOf(%s, %s) = %v, want %v", tc.x, tc.m, got, tc.want)
		}
	}
}
