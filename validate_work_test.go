package preflight

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// TestValidationWorkIsRepeatable checks that what a validation charges
// against maxValidationWork depends on the schema and the instance alone:
// not on what earlier validations of the same compiled schema matched (a
// decoded request checked twice, or a catalog schema shared by many calls),
// and not on validations running beside it. A matcher that kept its DFA
// from one validation to the next would charge less the second time, and a
// request near the limit would get a verdict once and limit_exceeded the
// next.
func TestValidationWorkIsRepeatable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ab := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab"[rng.IntN(2)]
		}
		return string(b)
	}
	strs := func(ss ...string) string {
		b, err := json.Marshal(ss)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var emails, stamps []string
	for i := range 400 {
		emails = append(emails, strings.Repeat("x", i%13+1)+"@example.com")
		stamps = append(stamps, "2026-11-24T10:17:13."+strings.Repeat("7", i%9+1)+"Z")
	}
	tests := []struct {
		name, schema, instance string
	}{
		{"DFA on long texts", `{"items":{"pattern":"(a|b)*a(a|b){8}c"}}`, strs(ab(20000), ab(20000), ab(100))},
		{"Pike VM, then the DFA", `{"items":{"pattern":"^[a-z]+@[a-z]+\\.com$"}}`, strs(emails...)},
		{"after a fixed prefix", `{"items":{"pattern":"^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?(?:Z|[+-]\\d{2}:\\d{2})$"}}`, strs(stamps...)},
		{"one pattern in two places", `{"properties":{"a":{"items":{"pattern":"[ab]*c"}},"b":{"items":{"pattern":"[ab]*c"}}}}`,
			`{"a":` + strs(ab(3000), ab(3000)) + `,"b":` + strs(ab(3000)) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, cerr := compileSchema(parseTest(t, tt.schema), "/schema")
			if cerr != nil {
				t.Fatal(cerr)
			}
			inst := parseTest(t, tt.instance)
			work := func() int {
				w := validator{errs: issueList{max: 100}, work: maxValidationWork, root: s}
				w.walk(s, inst, nil)
				if w.over != nil {
					t.Errorf("validation ran out of work: %v", w.over)
				}
				return maxValidationWork - w.work
			}
			first := work()
			if first <= 0 {
				t.Fatalf("validation charged %d units, want some", first)
			}
			for i := range 3 {
				if got := work(); got != first {
					t.Errorf("validation %d charged %d units, the first %d", i+2, got, first)
				}
			}
			var wg sync.WaitGroup
			got := make([]int, 8)
			for i := range got {
				wg.Go(func() { got[i] = work() })
			}
			wg.Wait()
			for i, g := range got {
				if g != first {
					t.Errorf("concurrent validation %d charged %d units, the first %d", i, g, first)
				}
			}
		})
	}
}
