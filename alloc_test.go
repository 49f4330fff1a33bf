package preflight

import (
	"strings"
	"testing"
)

// allocBudgets are the allocations per call of bytes in → result out on
// the benchmark corpus (testdata/bench), as measured when the hot-path
// idioms were last reviewed (see internal/README.md). A change that adds
// an allocation to these paths fails here and must either be paid for
// elsewhere or raise the budget with benchstat figures in its commit.
var allocBudgets = map[string]float64{
	"check_array_200_invalid":           31,
	"check_array_200_valid":             15,
	"check_create_issue_invalid":        25,
	"check_create_issue_valid":          20,
	"check_events_200_valid":            25,
	"check_nested_order_invalid":        29,
	"check_nested_order_valid":          23,
	"check_object_40_invalid":           23,
	"check_object_40_valid":             15,
	"check_send_email_invalid":          30,
	"check_send_email_valid":            25,
	"check_send_email_attachment_valid": 39,
	"check_web_search_invalid":          22,
	"check_web_search_valid":            17,
	"decide_history_000":                15,
	"decide_history_010":                27,
	"decide_history_100":                117,
}

func TestAllocationBudgets(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	files := benchFiles(t, "*.json")
	for name, data := range files {
		budget, ok := allocBudgets[name]
		if !ok {
			t.Errorf("testdata/bench/%s.json has no allocation budget", name)
			continue
		}
		run := func() {
			if _, err := checkBytes(data); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasPrefix(name, "decide_") {
			run = func() {
				if _, err := decideBytes(data); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := testing.AllocsPerRun(20, run); got > budget {
			t.Errorf("%s: %v allocations per call, budget %v", name, got, budget)
		}
	}
}
