package preflight

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/strictjson"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestToolSchemaFullVocabulary decides calls of tools whose schemas are
// outside the twelve-keyword subset (what zod, Pydantic and the
// TypeScript SDK write): each is checked, and a bad payload is blocked
// with issues in Check's shape.
func TestToolSchemaFullVocabulary(t *testing.T) {
	for _, tc := range []struct {
		name, schema, payload string
		want                  []Issue // nil: allowed
	}{
		{"draft-07 $schema with items array", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
			"properties":{"p":{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false}}}`,
			`{"p":["a",1,2]}`, []Issue{{Path: "/tool/request/p/2", Code: "additionalItems", Message: "expected at most 2 items, found 3"}}},
		{"draft-07 valid", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"type":"array","items":[{"type":"string"}]}}}`,
			`{"p":["a",1,2]}`, nil},
		{"exclusiveMinimum", `{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0}}}`,
			`{"n":0}`, []Issue{{Path: "/tool/request/n", Code: "exclusiveMinimum", Message: "expected more than 0, found 0"}}},
		{"multipleOf exact", `{"type":"object","properties":{"n":{"multipleOf":0.01}}}`, `{"n":19.99}`, nil},
		{"multipleOf fails", `{"type":"object","properties":{"n":{"multipleOf":0.01}}}`, `{"n":19.999}`,
			[]Issue{{Path: "/tool/request/n", Code: "multipleOf", Message: "expected a multiple of 0.01, found 19.999"}}},
		{"$defs and $ref", `{"type":"object","$defs":{"id":{"type":"string","minLength":3}},"properties":{"a":{"$ref":"#/$defs/id"}}}`,
			`{"a":"xy"}`, []Issue{{Path: "/tool/request/a", Code: IssueMinLength, Message: "expected at least 3 characters, found 2"}}},
		{"anyOf names each branch", `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer","minimum":1}]}}}`,
			`{"v":0}`, []Issue{{Path: "/tool/request/v", Code: "anyOf", Message: "expected a value matching at least one of the 2 schemas of anyOf, found none: " +
				"#0 at /tool/request/v: expected string, found number; #1 at /tool/request/v: expected at least 1, found 0"}}},
		{"oneOf matches two", `{"type":"object","properties":{"v":{"oneOf":[{"type":"integer"},{"minimum":0}]}}}`,
			`{"v":3}`, []Issue{{Path: "/tool/request/v", Code: "oneOf", Message: "expected a value matching exactly one of the 2 schemas of oneOf, found one matching #0 and #1"}}},
		{"minItems and format ignored", `{"type":"object","properties":{"urls":{"type":"array","minItems":1,"items":{"type":"string","format":"uri"}}}}`,
			`{"urls":[]}`, []Issue{{Path: "/tool/request/urls", Code: "minItems", Message: "expected at least 1 items, found 0"}}},
		{"propertyNames", `{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`, `{"ok":1,"Bad":2}`,
			[]Issue{{Path: "/tool/request/Bad", Code: "propertyNames", Message: `expected property names matching propertyNames, found "Bad": expected a value matching pattern "^[a-z]+$", found "Bad"`}}},
		{"unevaluatedProperties", `{"type":"object","allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`, `{"a":1,"b":2}`,
			[]Issue{{Path: "/tool/request/b", Code: "unevaluatedProperties", Message: `property "b" is not allowed: no keyword evaluates it and unevaluatedProperties is false`}}},
		{"if then else", `{"type":"object","if":{"required":["card"]},"then":{"required":["cvv"]}}`, `{"card":"4111"}`,
			[]Issue{{Path: "/tool/request/cvv", Code: IssueRequired, Message: `missing required property "cvv"`}}},
		{"dependentRequired", `{"type":"object","dependentRequired":{"card":["cvv"]}}`, `{"card":"4111"}`,
			[]Issue{{Path: "/tool/request/cvv", Code: "dependentRequired", Message: `missing property "cvv", required when "card" is present`}}},
		{"OpenAPI nullable widens type", `{"type":"object","properties":{"s":{"type":"string","nullable":true}}}`, `{"s":null}`, nil},
		{"recursive $ref", `{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}},"v":{"type":"integer"}}}}}`,
			`{"tree":{"kids":[{"kids":[{"v":"x"}]}]}}`, []Issue{{Path: "/tool/request/tree/kids/0/kids/0/v", Code: IssueType, Message: "expected integer, found string"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCatalog(Operation{Provider: "p", Name: "t", Schema: json.RawMessage(tc.schema)})
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.Decide(customCall("p", "t", tc.payload))
			if err != nil {
				t.Fatal(err)
			}
			wantVerdict := VerdictAllow
			if tc.want != nil {
				wantVerdict = VerdictBlock
			}
			if d.Verdict != wantVerdict {
				t.Errorf("verdict %s, want %s", d.Verdict, wantVerdict)
			}
			if tc.want == nil {
				tc.want = []Issue{}
			}
			if diff := gocmp.Diff(tc.want, d.Issues); diff != "" {
				t.Errorf("issues (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckRequestKeepsSubset: the same schemas a tool may use are still
// refused by /check-request's Check (the spec's twelve keywords).
func TestCheckRequestKeepsSubset(t *testing.T) {
	for _, kw := range []string{`"anyOf":[{}]`, `"$defs":{}`, `"exclusiveMinimum":0`, `"$schema":"http://json-schema.org/draft-07/schema#"`, `"format":"uri"`} {
		v, err := strictjson.Parse([]byte(`{"type":"object",`+kw+`}`), strictjson.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if _, serr := compileFor(useCheckRequest, v, "/schema"); serr == nil || serr.Code != ErrorUnsupportedSchemaKeyword {
			t.Errorf("check-request schema with %s: %v, want unsupported_schema_keyword", kw, serr)
		}
		if _, serr := compileFor(useTool, v, "/schema"); serr != nil {
			t.Errorf("tool schema with %s: %v, want it compiled", kw, serr)
		}
	}
}

// TestToolSchemaBounds: a hostile tool schema is refused at compile time,
// or its validation stopped with limit_exceeded, never left to run.
func TestToolSchemaBounds(t *testing.T) {
	decide := func(t *testing.T, schema, payload string) error {
		t.Helper()
		if len(schema) > MaxSchemaBytes {
			t.Fatalf("test schema is %d bytes", len(schema))
		}
		c, err := NewCatalog(Operation{Provider: "p", Name: "t", Schema: json.RawMessage(schema)})
		if err != nil {
			return err
		}
		_, err = c.Decide(customCall("p", "t", payload))
		return err
	}
	wantLimit := func(t *testing.T, err error, code IssueCode) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Code != ErrorLimitExceeded || len(e.Details) != 1 || e.Details[0].Code != code {
			t.Fatalf("got %v, want limit_exceeded with %s", err, code)
		}
		t.Logf("%s: %s", e.Details[0].Path, e.Details[0].Message)
	}
	t.Run("many subschemas", func(t *testing.T) {
		err := decide(t, `{"type":"object","allOf":[`+strings.Repeat(`{},`, maxFullSubschemas)+`{}]}`, `{}`)
		wantLimit(t, err, IssueMaxNodes)
	})
	t.Run("ref cycle", func(t *testing.T) {
		err := decide(t, `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, `{"x":1}`)
		wantLimit(t, err, IssueMaxDepth)
	})
	t.Run("exponential anyOf", func(t *testing.T) {
		// Level i+1's two branches both go through level i: 2^30 paths
		// to the pattern at level 0, each failing only after matching.
		var defs strings.Builder
		defs.WriteString(`"l0":{"type":"string","pattern":"^a+$"}`)
		for i := 1; i <= 30; i++ {
			r := `{"$ref":"#/$defs/l` + strconv.Itoa(i-1) + `"}`
			defs.WriteString(`,"l` + strconv.Itoa(i) + `":{"anyOf":[{"allOf":[` + r + `,{"minLength":1000000}]},{"allOf":[` + r + `,{"maxLength":0}]}]}`)
		}
		err := decide(t, `{"type":"object","$defs":{`+defs.String()+`},"properties":{"x":{"$ref":"#/$defs/l30"}}}`,
			`{"x":"`+strings.Repeat("a", 1000)+`"}`)
		wantLimit(t, err, IssueMaxWork)
	})
	t.Run("huge enum", func(t *testing.T) {
		enum := strings.Repeat(`[1],`, 8000) + `[2]`
		err := decide(t, `{"type":"object","properties":{"x":{"type":"array","items":{"enum":[`+enum+`]}}}}`,
			`{"x":[`+strings.Repeat(`[2],`, 999)+`[2]]}`)
		wantLimit(t, err, IssueMaxWork)
	})
}

// FuzzFullSchema feeds arbitrary schema and instance documents through
// the full compiler and validator: neither may panic, a failed compile
// lists details under the schema's pointer, every issue lies under the
// instance's pointer, and where the subset's compiler accepts the schema
// too, the two validators report the same issues (the subset is the fast
// path of a tool schema, so they must agree).
func FuzzFullSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a/b":{"enum":[1,"x"]}},"required":["c"]}`, `{"a/b":1.0,"z":[]}`)
	f.Add(`{"items":{"pattern":"^a+$","maxLength":2},"additionalProperties":false}`, `["aaa","💩"]`)
	f.Add(`{"$defs":{"n":{"anyOf":[{"type":"integer"},{"$ref":"#/$defs/n"}]}},"$ref":"#/$defs/n"}`, `1.5`)
	f.Add(`{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"const":1}],"additionalItems":false,"dependencies":{"a":["b"]}}`, `[1,2]`)
	f.Add(`{"prefixItems":[{"type":"string"}],"unevaluatedItems":false,"contains":{"const":2},"minContains":1}`, `["x",2]`)
	f.Add(`{"allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":{"type":"string"},"propertyNames":{"maxLength":3}}`, `{"a":1,"bb":2,"cccc":"x"}`)
	f.Add(`{"$dynamicAnchor":"x","$defs":{"d":{"$dynamicRef":"#x"}},"oneOf":[{"multipleOf":0.1},{"exclusiveMaximum":1e2}]}`, `0.30000000000000004`)
	f.Add(`{"if":{"minProperties":1},"then":{"maxProperties":1},"else":{"not":{}},"dependentSchemas":{"a":{"required":["c"]}}}`, `{"a":1,"b":2}`)
	f.Add(`{"properties":{"x":false},"items":true,"uniqueItems":true}`, `[{"x":0},{"x":0}]`)
	f.Add(`{"items":{"format":"hostname"},"prefixItems":[{"format":"date-time"},{"format":"uri"}]}`, `["2024-02-29T23:59:60Z","a:b","xn--ll-0ea.example"]`)
	f.Add(`{"items":[{"format":"email"},{"format":"duration"}],"$schema":"http://json-schema.org/draft-07/schema"}`, `["\"a b\"@[IPv6:::1]","P1Y2M3DT4H"]`)
	f.Fuzz(func(t *testing.T, schemaSrc, inst string) { fuzzFullSchemaOne(t, schemaSrc, inst) })
}

// fuzzFullSchemaOne is one input of FuzzFullSchema.
func fuzzFullSchemaOne(t *testing.T, schemaSrc, inst string) {
	{
		sv, err := strictjson.Parse([]byte(schemaSrc), strictjson.Limits{MaxDepth: 64})
		if err != nil {
			return
		}
		iv, err := strictjson.Parse([]byte(inst), strictjson.Limits{MaxDepth: 64})
		if err != nil {
			return
		}
		// Format assertion when the schema asks for it by its length's
		// parity, so both modes are explored from one corpus; every
		// checker runs on the instance's strings either way.
		assertFormat := len(schemaSrc)%2 == 0
		for _, check := range formatCheckers {
			check(inst)
		}
		d, serr := compileFullSchemaWith(sv, "/schema", assertFormat)
		if serr != nil {
			if len(serr.Details) == 0 {
				t.Fatalf("compile error without details: %v", serr)
			}
			for _, is := range serr.Details {
				if !strings.HasPrefix(is.Path, "/schema") || is.Message == "" || is.Code == "" {
					t.Fatalf("bad detail %+v", is)
				}
			}
			return
		}
		full := issueList{}
		over := d.validate(iv, "/request/body", &full)
		if over != nil {
			if over.Code != ErrorLimitExceeded || len(over.Details) != 1 {
				t.Fatalf("bad limit error %+v", over)
			}
			return
		}
		for _, is := range full.issues {
			if !strings.HasPrefix(is.Path, "/request/body") || is.Code == "" || is.Message == "" {
				t.Fatalf("bad issue %+v", is)
			}
		}
		c := schemaCompiler{base: "/schema", annotations: true}
		s, cerr := c.compile(sv)
		if cerr != nil || assertFormat {
			return // the subset ignores format (as an annotation)
		}
		sub := issueList{}
		if s.validate(iv, "/request/body", &sub) != nil {
			return
		}
		sortIssues := func(is []Issue) []Issue {
			out := slices.Clone(is)
			slices.SortFunc(out, func(a, b Issue) int {
				return cmp.Compare(a.Path+"\x00"+string(a.Code)+"\x00"+a.Message, b.Path+"\x00"+string(b.Code)+"\x00"+b.Message)
			})
			return out
		}
		if diff := gocmp.Diff(sortIssues(sub.issues), sortIssues(full.issues), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("subset and full validators disagree (-subset +full):\n%s", diff)
		}
	}
}

// toolWorstCases are hostile tool schemas with payloads within every
// limit, each built to make the full validator work as hard as it can.
func toolWorstCases() []struct{ name, schema, payload string } {
	// level i+1 = anyOf of two branches through level i: 2^30 paths.
	expo := func(leaf, extra string) string {
		var b strings.Builder
		b.WriteString(`"l0":` + leaf)
		for i := 1; i <= 30; i++ {
			r := `{"$ref":"#/$defs/l` + strconv.Itoa(i-1) + `"}`
			b.WriteString(`,"l` + strconv.Itoa(i) + `":{` + extra + `"anyOf":[` + r + `,` + r + `]}`)
		}
		return `{"type":"object","$defs":{` + b.String() + `},"properties":{"x":{"$ref":"#/$defs/l30"}}}`
	}
	props := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"p` + strconv.Itoa(i) + `":` + strconv.Itoa(i))
		}
		return "{" + b.String() + "}"
	}
	return []struct{ name, schema, payload string }{
		{"exponential anyOf", expo(`{"type":"string"}`, ""), `{"x":1}`},
		{"exponential anyOf, unevaluated", expo(`{"properties":{"p1":{}}}`, `"unevaluatedProperties":true,`), `{"x":` + props(200) + `}`},
		{"exponential anyOf, pattern", expo(`{"pattern":"^(a|b|ab)*c$"}`, ""), `{"x":"` + strings.Repeat("ab", 4000) + `"}`},
		{"reference cycle", `{"type":"object","$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, `{"x":1}`},
		{"uniqueItems, small items", `{"type":"object","properties":{"x":{"uniqueItems":true}}}`,
			`{"x":[` + strings.TrimSuffix(strings.Repeat(`{"a":[1,2]},`, 1900), ",") + `]}`},
		{"propertyNames on many members", `{"type":"object","properties":{"x":{"propertyNames":{"anyOf":[{"pattern":"^q"},{"maxLength":1},{"pattern":"^p[0-9]+$"}]}}}}`,
			`{"x":` + props(9000) + `}`},
		{"contains and unevaluatedItems", `{"type":"object","properties":{"x":{"contains":{"anyOf":[{"type":"string"},{"not":{"type":"number"}}]},"minContains":0,"unevaluatedItems":{"type":"number"},"allOf":[{"prefixItems":[{},{}]}]}}}`,
			`{"x":[` + strings.TrimSuffix(strings.Repeat(`1,`, 9000), ",") + `]}`},
	}
}

// TestToolSchemaWorstCaseCPU logs the process CPU time of NewCatalog plus
// Decide for each worst case (averaged over a few runs): the figure the
// 50 ms per call bound is about. It asserts only that each ends in a
// decision or limit_exceeded; time is read with -v (the machine is
// shared).
func TestToolSchemaWorstCaseCPU(t *testing.T) {
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
	for _, tc := range toolWorstCases() {
		if len(tc.schema) > MaxSchemaBytes {
			t.Fatalf("%s: schema of %d bytes", tc.name, len(tc.schema))
		}
		outcome := ""
		start := cpu()
		for range runs {
			c, err := NewCatalog(Operation{Provider: "p", Name: "t", Schema: json.RawMessage(tc.schema)})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			d, err := c.Decide(customCall("p", "t", tc.payload))
			var e *Error
			switch {
			case err == nil:
				outcome = string(d.Verdict)
			case errors.As(err, &e) && e.Code == ErrorLimitExceeded:
				outcome = string(e.Code) + " " + string(e.Details[0].Code)
			default:
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		t.Logf("%-34s %6.1f ms CPU per call (%s)", tc.name, float64(cpu()-start)/runs/1e6, outcome)
	}
}

// TestRegexFormatBounded: with format asserted, strings checked as
// regexes are compiled within the work of one call: an array of patterns
// heavy on Unicode classes ends in limit_exceeded, not in seconds of CPU.
func TestRegexFormatBounded(t *testing.T) {
	sv, err := strictjson.Parse([]byte(`{"type":"array","items":{"type":"string","format":"regex"}}`), strictjson.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d, serr := compileFullSchemaWith(sv, "", true)
	if serr != nil {
		t.Fatal(serr)
	}
	// Each item: 80 classes of about 680 ranges.
	items := strings.TrimSuffix(strings.Repeat(`"`+strings.Repeat(`\\p{L}`, 80)+`",`, 300), ",")
	iv, err := strictjson.Parse([]byte(`[`+items+`]`), strictjson.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	errs := issueList{}
	over := d.validate(iv, "", &errs)
	t.Logf("%d patterns of 80 \\p{L}: %v, %v", 300, time.Since(start), over)
	if over == nil || over.Code != ErrorLimitExceeded || over.Details[0].Code != IssueMaxWork {
		t.Fatalf("got %v (%d issues), want limit_exceeded max_work", over, len(errs.issues))
	}
	// One such pattern is a valid regex.
	errs = issueList{}
	one, _ := strictjson.Parse([]byte(`["`+strings.Repeat(`\\p{L}`, 80)+`", "(", "a(?=b)"]`), strictjson.Limits{})
	if over := d.validate(one, "", &errs); over != nil || len(errs.issues) != 1 || errs.issues[0].Path != "/1" {
		t.Fatalf("got %v, %+v; want only /1 (an unclosed group) invalid", over, errs.issues)
	}
}
