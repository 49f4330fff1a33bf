package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseBenchstatCSV(t *testing.T) {
	in := "goos: linux\ncpu: Some CPU\n" +
		",preflight,,unmarshal,,,\n" +
		",sec/op,CI,sec/op,CI,vs base,P\n" +
		"a_valid,0.000002,3%,0.000004,1%,+100.00%,p=0.002 n=6\n" +
		"geomean,0.000002,,0.000004,,+100.00%,\n" +
		"\n" +
		",preflight,,unmarshal,,,\n" +
		",B/op,CI,B/op,CI,vs base,P\n" +
		"a_valid,100,0%,200,0%,+100.00%,p=0.002 n=6\n" +
		"\n" +
		",preflight,,unmarshal,,,\n" +
		",allocs/op,CI,allocs/op,CI,vs base,P\n" +
		"a_valid,3,0%,7,0%,+133.33%,p=0.002 n=6\n"
	got, err := parseBenchstatCSV([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &table{
		Cases: []string{"a_valid"},
		By: map[string]map[string]*metrics{"a_valid": {
			"preflight": {NsPerOp: 2000, BytesPerOp: 100, AllocsPerOp: 3, HasNs: true, HasBytes: true, HasAllocs: true, CI: "3%"},
			"unmarshal": {NsPerOp: 4000, BytesPerOp: 200, AllocsPerOp: 7, HasNs: true, HasBytes: true, HasAllocs: true, CI: "1%"},
		}},
	}
	approx := cmp.Comparer(func(a, b float64) bool { d := a - b; return d < 1e-6 && d > -1e-6 })
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("parseBenchstatCSV (-want +got):\n%s", diff)
	}
}

func TestParseBenchstatCSVEmpty(t *testing.T) {
	if _, err := parseBenchstatCSV([]byte("goos: linux\n")); err == nil {
		t.Error("no error for output without tables")
	}
}
