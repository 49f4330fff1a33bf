package preflight

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/strictjson"
	"github.com/google/go-cmp/cmp"
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
			if diff := cmp.Diff(tc.want, d.Issues); diff != "" {
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
