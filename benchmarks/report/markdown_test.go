package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBusyMachine(t *testing.T) {
	tests := []struct {
		name       string
		start, end string
		others     float64
		known      bool
		want       string
	}{
		{"quiet", "0.50 / 0.40 / 0.30", "0.90 / 0.50 / 0.30", 0.02, true, ""},
		{"busy at start", "12.5 / 9.0 / 3.0", "1.00 / 2.0 / 2.0", 0.02, true, "1-minute load average 12.5 on 2 CPUs at the start"},
		{"the run's own load at the end", "1.00 / 1.0 / 1.0", "4.55 / 2.0 / 2.0", 0.05, true, ""},
		{"others busy", "1.00 / 1.0 / 1.0", "4.55 / 2.0 / 2.0", 0.4, true, "other processes kept 0.40 CPUs busy on average during the run"},
		{"both", "3.5 / 1.0 / 1.0", "1.00 / 2.0 / 2.0", 1.25, true, "1-minute load average 3.5 on 2 CPUs at the start; other processes kept 1.25 CPUs busy on average during the run"},
		{"others unknown, busy at end", "1.00 / 1.0 / 1.0", "3.10 / 2.0 / 2.0", 0, false, "1-minute load average 3.1 on 2 CPUs at the end"},
		{"unknown", "unknown", "", 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := machine{Cores: 2, LoadStart: tt.start, LoadEnd: tt.end, Others: tt.others, OthersKnown: tt.known}
			if got := busyMachine(m); got != tt.want {
				t.Errorf("busyMachine = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRatioStats(t *testing.T) {
	tab := &table{
		Cases: []string{"a", "b", "c"},
		By: map[string]map[string]*metrics{
			"a": {"p": {NsPerOp: 10, HasNs: true}, "q": {NsPerOp: 200, HasNs: true}},
			"b": {"p": {NsPerOp: 10, HasNs: true}, "q": {NsPerOp: 50, HasNs: true}},
			"c": {"p": {NsPerOp: 10, HasNs: true}}, // q not measured
		},
	}
	rs := newRatioStats(tab, true, 10, ratio(tab, "q", "p"))
	got := struct {
		N           int
		Geomean     float64
		Worst       float64
		WorstCase   string
		AllPass     bool
		PerCasePass map[string]bool
	}{rs.N, rs.Geomean, rs.Worst, rs.WorstCase, rs.AllPass, rs.perCasePass}
	want := got
	want.N, want.Geomean, want.Worst, want.WorstCase, want.AllPass = 2, 10, 5, "b", false
	want.PerCasePass = map[string]bool{"a": true, "b": false}
	approx := cmp.Comparer(func(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 })
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("newRatioStats (-want +got):\n%s", diff)
	}
}
