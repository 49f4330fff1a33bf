package preflight

import (
	"encoding/json"
	"strings"
	"testing"
)

// allocBudgets are the allocations per call of bytes in → result out
// (CheckJSON, DecideJSON) on the benchmark corpus (testdata/bench), and
// goBudgets those of Check and Decide on the same requests built in Go, as
// measured when the hot path was last reviewed (see internal/README.md),
// plus one for a scratch tape the garbage collector took from its pool. A
// change that adds an allocation to these paths fails here and must either
// be paid for elsewhere or raise the budget with benchstat figures in its
// commit.
var allocBudgets = map[string]float64{
	"check_array_200_invalid":           27,
	"check_array_200_valid":             12,
	"check_create_issue_invalid":        21,
	"check_create_issue_valid":          17,
	"check_events_200_valid":            23,
	"check_nested_order_invalid":        25,
	"check_nested_order_valid":          20,
	"check_object_40_invalid":           19,
	"check_object_40_valid":             12,
	"check_send_email_attachment_valid": 36,
	"check_send_email_invalid":          26,
	"check_send_email_valid":            22,
	"check_web_search_invalid":          18,
	"check_web_search_valid":            14,
	"decide_history_000":                10,
	"decide_history_010":                22,
	"decide_history_100":                112,
}

var goBudgets = map[string]float64{
	"check_array_200_invalid":           28,
	"check_array_200_valid":             13,
	"check_create_issue_invalid":        22,
	"check_create_issue_valid":          18,
	"check_events_200_valid":            24,
	"check_nested_order_invalid":        26,
	"check_nested_order_valid":          21,
	"check_object_40_invalid":           20,
	"check_object_40_valid":             13,
	"check_send_email_attachment_valid": 37,
	"check_send_email_invalid":          28,
	"check_send_email_valid":            24,
	"check_web_search_invalid":          19,
	"check_web_search_valid":            15,
	"decide_history_000":                8,
	"decide_history_010":                9,
	"decide_history_100":                9,
}

// TestAllocationBudgets holds the cold paths to their budgets: the
// schema cache is off, so every check compiles its schema.
func TestAllocationBudgets(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	withCache(nil, func() { coldAllocationBudgets(t) })
}

// warmBudgets are the allocations per call of CheckJSON and of Check when
// the schema is in the cache (a server answering the same tool's calls),
// as measured once failures shared a text buffer and the headers were
// hashed from the stack, plus one for a scratch tape the collector took.
// The two paths allocate alike there.
var warmBudgets = map[string]float64{
	"check_array_200_invalid":           13,
	"check_array_200_valid":             7,
	"check_create_issue_invalid":        11,
	"check_create_issue_valid":          9,
	"check_events_200_valid":            7,
	"check_nested_order_invalid":        10,
	"check_nested_order_valid":          7,
	"check_object_40_invalid":           11,
	"check_object_40_valid":             7,
	"check_send_email_attachment_valid": 12,
	"check_send_email_invalid":          11,
	"check_send_email_valid":            9,
	"check_web_search_invalid":          9,
	"check_web_search_valid":            7,
}

// TestWarmAllocationBudgets holds the warm paths to warmBudgets, with a
// cache of its own that the first call fills.
func TestWarmAllocationBudgets(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	withCache(newSchemaCache(DefaultSchemaCacheLimits), func() {
		for name, data := range benchFiles(t, "check_*.json") {
			budget, ok := warmBudgets[name]
			if !ok {
				t.Errorf("testdata/bench/%s.json has no warm allocation budget", name)
				continue
			}
			var creq CheckRequest
			if err := json.Unmarshal(data, &creq); err != nil {
				t.Fatal(err)
			}
			for _, path := range []struct {
				name string
				run  func() (*CheckResult, error)
			}{{"from bytes", func() (*CheckResult, error) { return CheckJSON(data) }},
				{"built in Go", func() (*CheckResult, error) { return Check(&creq) }}} {
				if _, err := path.run(); err != nil { // fills the cache
					t.Fatal(err)
				}
				if got := testing.AllocsPerRun(20, func() {
					if _, err := path.run(); err != nil {
						t.Fatal(err)
					}
				}); got > budget {
					t.Errorf("%s: %v allocations per warm call %s, budget %v", name, got, path.name, budget)
				}
			}
		}
	})
}

func coldAllocationBudgets(t *testing.T) {
	files := benchFiles(t, "*.json")
	for name, data := range files {
		budget, ok := allocBudgets[name]
		goBudget, goOK := goBudgets[name]
		if !ok || !goOK {
			t.Errorf("testdata/bench/%s.json has no allocation budget", name)
			continue
		}
		run := func() {
			if _, err := CheckJSON(data); err != nil {
				t.Fatal(err)
			}
		}
		var creq CheckRequest
		var dreq ToolCallRequest
		goRun := func() {
			if _, err := Check(&creq); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasPrefix(name, "decide_") {
			run = func() {
				if _, err := DecideJSON(data); err != nil {
					t.Fatal(err)
				}
			}
			goRun = func() {
				if _, err := Decide(&dreq); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := json.Unmarshal(data, &creq); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &dreq); err != nil {
			t.Fatal(err)
		}
		if got := testing.AllocsPerRun(20, run); got > budget {
			t.Errorf("%s: %v allocations per call from bytes, budget %v", name, got, budget)
		}
		if got := testing.AllocsPerRun(20, goRun); got > goBudget {
			t.Errorf("%s: %v allocations per call built in Go, budget %v", name, got, goBudget)
		}
	}
}
