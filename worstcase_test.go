package preflight

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// worstCaseBody is a check-request body with the given schema and request
// body, both raw JSON.
func worstCaseBody(schema, body string) []byte {
	return []byte(`{"request":{"method":"POST","url":"https://api.example.com/x","headers":{},"body":` + body + `},"schema":` + schema + `}`)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// worstCases are requests within the body and schema limits built to cost
// the most CPU: the pattern of issue 21 against 60,000 characters, classes
// and alternations (the matcher's dearest steps), a pattern applied to many
// strings, a numeric enum applied to many numbers, and a schema of
// patterns that are costly to compile.
func worstCases() []struct{ name, data string } {
	issue := `[ab]*a[ab]{1000}[ab]{1000}[ab]{990}c`
	nums := make([]string, 5400)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	var props, classes, shortProps, shortBody []string
	for i := range 10 {
		props = append(props, fmt.Sprintf(`"p%d":{"pattern":%s}`, i, jsonString(fmt.Sprintf(`[\p{L}%d]*a[\p{L}]{999}[\p{L}]{999}[\p{L}]{990}c`, i))))
		// Patterns of about 3,000 instructions whose every step has
		// about 1,400 threads, on strings short enough for the Pike VM
		// (pikeMaxText).
		shortProps = append(shortProps, fmt.Sprintf(`"s%d":{"items":{"pattern":%s}}`, i, jsonString(fmt.Sprintf(`(?:a?){1400}%d?b`, i))))
		shortBody = append(shortBody, fmt.Sprintf(`"s%d":[%s"a"]`, i, strings.Repeat(jsonString(strings.Repeat("a", 64))+",", 40)))
	}
	for i := range 1900 {
		classes = append(classes, fmt.Sprintf(`[\p{L}\u{%x}]`, 0x2000+i))
	}
	// Compile-heavy schemas (issue 21's follow-up): distinct large classes
	// in many patterns, negations, classes repeated near the program-size
	// limit, and thousands of tiny schemas.
	var classProps, negated, nearLimit, tiny []string
	for i := range 860 {
		classProps = append(classProps, fmt.Sprintf(`"%x":{"pattern":%s}`, i, jsonString(fmt.Sprintf(`[\p{L}\u{%x}]`, 0x2000+i))))
	}
	for i := range 1600 {
		negated = append(negated, fmt.Sprintf(`[^\P{L}\u{%x}]`, 0x2000+i))
	}
	for i := range 10 {
		nearLimit = append(nearLimit, fmt.Sprintf(`"n%d":{"pattern":%s}`, i, jsonString(fmt.Sprintf(`[\p{L}\p{N}\p{M}\p{P}\p{S}\u{%x}]{2995}`, 0x2000+i))))
	}
	for i := range 830 {
		tiny = append(tiny, fmt.Sprintf(`"%x":{"enum":[1,"a",%d],"const":%d}`, i, i, i))
	}
	// At the class-range bound: 87 distinct [\p{L}…] classes (685
	// ranges each in Unicode 17) in one alternation, matched against
	// 20,000 letters from many scripts, so that the DFA meets many rune
	// classes.
	var atBound []string
	for i := range 87 {
		atBound = append(atBound, fmt.Sprintf(`[\p{L}\u{%x}]`, 0x2000+i))
	}
	var small []string
	for i := range 2900 {
		small = append(small, fmt.Sprintf(`[a\u{%x}]`, 0x100+i))
	}
	var letters strings.Builder
	scripts := []rune("aéжλאبकกかㄱ中ᚠⴰꓐ𐐀")
	for i := 0; letters.Len() < 40000; i++ {
		letters.WriteRune(scripts[i%len(scripts)] + rune(i%7))
	}
	return []struct{ name, data string }{
		{"issue pattern", string(worstCaseBody(`{"type":"string","pattern":`+jsonString(issue)+`}`, jsonString(strings.Repeat("ab", 30000))))},
		{"unicode classes", string(worstCaseBody(`{"pattern":`+jsonString(`[\p{L}\p{N}\p{M}]*x[\p{L}\p{N}\p{M}]{200}y`)+`}`, jsonString(strings.Repeat("x", 60000))))},
		{"alternation", string(worstCaseBody(`{"pattern":`+jsonString(`(?:k|K)*k(?:k|s){200}(?:k|s){200}(?:k|s){200}c`)+`}`, jsonString(strings.Repeat("k", 60000))))},
		{"many states", string(worstCaseBody(`{"pattern":`+jsonString(`[ab]*a[ab]{20}c`)+`}`, jsonString(strings.Repeat("ab", 30000))))},
		{"literal", string(worstCaseBody(`{"pattern":`+jsonString(`x*x`+strings.Repeat("x?", 1400)+`!`)+`}`, jsonString(strings.Repeat("x", 60000))))},
		{"pattern on many strings", string(worstCaseBody(`{"items":{"pattern":`+jsonString(issue)+`}}`, `[`+strings.Repeat(jsonString(strings.Repeat("ab", 3000))+",", 9)+`"ab"]`))},
		{"numeric enum", string(worstCaseBody(`{"items":{"enum":[`+strings.Join(nums, ",")+`]}}`, `[`+strings.Repeat("9,", 14999)+`9]`))},
		{"costly compile", string(worstCaseBody(`{"properties":{`+strings.Join(props, ",")+`}}`, `{"p0":"x"}`))},
		{"distinct classes", string(worstCaseBody(`{"pattern":`+jsonString(strings.Join(classes, ""))+`}`, `"x"`))},
		{"distinct class patterns", string(worstCaseBody(`{"properties":{`+strings.Join(classProps, ",")+`}}`, `{"0":"x"}`))},
		{"negated classes", string(worstCaseBody(`{"pattern":`+jsonString(strings.Join(negated, ""))+`}`, `"x"`))},
		{"big classes near the size limit", string(worstCaseBody(`{"properties":{`+strings.Join(nearLimit, ",")+`}}`, `{"n0":"x"}`))},
		{"classes at the range bound", string(worstCaseBody(`{"pattern":`+jsonString(`^(?:`+strings.Join(atBound, "|")+`)*$`)+`}`, jsonString(letters.String())))},
		{"many small classes", string(worstCaseBody(`{"pattern":`+jsonString(strings.Join(small, ""))+`}`, jsonString(strings.Repeat("a", 32000))))},
		{"big patterns on short strings", string(worstCaseBody(`{"properties":{`+strings.Join(shortProps, ",")+`}}`, `{`+strings.Join(shortBody, ",")+`}`))},
		{"tiny schemas", string(worstCaseBody(`{"properties":{`+strings.Join(tiny, ",")+`}}`, `{"0":0}`))},
	}
}

// TestWorkBound: the dearest requests within the limits either finish or
// stop at the work bound with limit_exceeded naming the keyword; the
// issue's pattern stops at its pattern keyword.
func TestWorkBound(t *testing.T) {
	for _, tc := range worstCases() {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.data) > 65536 {
				t.Fatalf("the body is %d bytes, over the limit", len(tc.data))
			}
			req, err := DecodeCheckRequest([]byte(tc.data))
			if pe, ok := err.(*Error); ok && pe.Code == ErrorUnsupportedPattern && len(pe.Details) > 0 &&
				strings.Contains(pe.Details[0].Message, "character-class ranges together") {
				return // refused at the class-range bound, before any validation
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			_, err = Check(req)
			if err == nil {
				return
			}
			pe, ok := err.(*Error)
			if !ok || pe.Code != ErrorLimitExceeded || len(pe.Details) != 1 || pe.Details[0].Code != IssueMaxWork {
				t.Fatalf("error %v; want limit_exceeded with one max_work detail", err)
			}
		})
	}
	req, err := DecodeCheckRequest([]byte(worstCases()[0].data))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Check(req)
	want := &Error{Code: ErrorLimitExceeded, Message: "the request exceeds a limit", Details: []Issue{{
		Path: "/schema/pattern", Code: IssueMaxWork,
		Message: "validating the body under this keyword needs more than 3000000 steps, the most one request may use; use a simpler pattern, a smaller enum or a shorter value",
	}}}
	if diff := cmp.Diff(want, err); diff != "" {
		t.Errorf("issue pattern (-want +got):\n%s", diff)
	}
}

// BenchmarkWorstCaseCheck measures decode plus Check for each worst case:
// the CPU one request can cost (issue 21 asks for at most 50 ms).
func BenchmarkWorstCaseCheck(b *testing.B) {
	for _, tc := range worstCases() {
		b.Run(tc.name, func(b *testing.B) {
			data := []byte(tc.data)
			for b.Loop() {
				if req, err := DecodeCheckRequest(data); err == nil {
					Check(req)
				}
			}
		})
	}
}

// TestWorstCaseCPU logs the process CPU time (user plus system, from
// getrusage) of decode plus Check for each worst case, averaged over a few
// runs: the figure issue 21 bounds at 50 ms per request. It asserts
// nothing about time (the machine is shared); run with -v to read it.
func TestWorstCaseCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("measures CPU time; skipped with -short")
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	const runs = 5
	for _, tc := range worstCases() {
		data := []byte(tc.data)
		outcome := ""
		start := cpu()
		for range runs {
			req, err := DecodeCheckRequest(data)
			if err == nil {
				var res *CheckResult
				if res, err = Check(req); err == nil {
					outcome = fmt.Sprintf("valid=%v", res.Valid)
				}
			}
			if pe, ok := err.(*Error); ok {
				outcome = string(pe.Code)
			}
		}
		t.Logf("%-32s %6.1f ms CPU per request (%s)", tc.name, float64(cpu()-start)/runs/1e6, outcome)
	}
}

// TestClassRangeBound: the character-class ranges of a schema's patterns
// are bounded together; a schema heavy on \p{…} within the bound compiles,
// the pattern that goes over is named, and the count is shared by all
// patterns of the schema.
func TestClassRangeBound(t *testing.T) {
	// \p{L} has 684 ranges in Unicode 17, so [\p{L}\u{…}] counts 685 and 87
	// of them (59,595) fit under 60,000; each is 15 characters long.
	classes := func(n, from int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `[\p{L}\u{%x}]`, 0x2000+from+i)
		}
		return b.String()
	}
	over := func(path, piece string, offset int) error {
		return &Error{Code: ErrorUnsupportedPattern, Message: "the schema has a pattern that is not an ECMA-262 regular expression (JavaScript, u flag) this validator can run",
			Details: []Issue{{Path: path, Code: IssueUnsupportedPattern, Message: fmt.Sprintf(
				"the schema's patterns hold more than 60000 character-class ranges together (the limit was reached at %q at offset %d); use fewer or smaller classes, such as fewer \\p{…} properties",
				piece, offset)}}}
	}
	for _, tc := range []struct {
		name, schema string
		want         error
	}{
		{"80 classes in one pattern", `{"pattern":` + jsonString(classes(80, 0)) + `}`, nil},
		{"80 classes in two patterns", `{"properties":{"a":{"pattern":` + jsonString(classes(40, 0)) + `},"b":{"pattern":` + jsonString(classes(40, 40)) + `}}}`, nil},
		{"the same \\p{L} 87 times", `{"pattern":` + jsonString(strings.Repeat(`\p{L}`, 87)) + `}`, nil},
		{"100 classes in one pattern", `{"pattern":` + jsonString(classes(100, 0)) + `}`,
			over("/schema/pattern", `[\p{L}`, 87*15)},
		{"100 classes in two patterns", `{"properties":{"a":{"pattern":` + jsonString(classes(50, 0)) + `},"b":{"pattern":` + jsonString(classes(50, 50)) + `}}}`,
			over("/schema/properties/b/pattern", `[\p{L}`, 37*15)}, // 50*685 + 38*685 > 60,000
		{"\\P{L} outside a class", `{"pattern":` + jsonString(strings.Repeat(`\P{L}`, 100)) + `}`,
			over("/schema/pattern", `\P{L}`, 87*5)}, // \P{L} has 685 ranges
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeCheckRequest(worstCaseBody(tc.schema, `"x"`))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if diff := cmp.Diff(tc.want, err); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
