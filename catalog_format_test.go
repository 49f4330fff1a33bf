package preflight

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAssertFormat: with Operation.AssertFormat (or "assertFormat": true in
// a catalog file) a string not of its format blocks; without it, format
// is an annotation. The subset's fast path (a schema of the twelve keywords
// plus format) and the full validator (a draft-07 schema with anyOf) both
// honour it, and formats outside the list stay annotations.
func TestAssertFormat(t *testing.T) {
	schemas := map[string]string{
		"subset": `{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"id":{"format":"uuid"},"x":{"format":"x-custom"}}}`,
		"full": `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"when":{"type":["string","null"],"format":"date-time"},` +
			`"id":{"format":"uuid"},"x":{"format":"x-custom"}},"anyOf":[{"required":["when"]},{"required":["id"]},{"required":["x"]}]}`,
	}
	tests := []struct {
		name, payload string
		want          []Issue // with assertion; without, every payload is allowed
	}{
		{"valid", `{"when":"2026-11-27T05:00:00Z","id":"123e4567-e89b-12d3-a456-426614174000","x":"anything"}`, nil},
		{"not a date-time", `{"when":"2026-13-27T05:00:00Z"}`, []Issue{{Path: "/tool/request/when", Code: "format"}}},
		{"not a uuid", `{"id":"123e4567"}`, []Issue{{Path: "/tool/request/id", Code: "format"}}},
		{"not a string: no format applies", `{"id":5}`, nil},
		{"an unknown format is an annotation", `{"x":"anything at all"}`, nil},
	}
	for kind, schema := range schemas {
		for _, assert := range []bool{false, true} {
			c, err := NewCatalog(Operation{Provider: "p", Name: "t", Schema: json.RawMessage(schema), AssertFormat: assert})
			if err != nil {
				t.Fatalf("%s assert=%v: %v", kind, assert, err)
			}
			for _, tc := range tests {
				d, err := c.Decide(customCall("p", "t", tc.payload))
				if err != nil {
					t.Fatal(err)
				}
				var got []Issue
				for _, is := range d.Issues {
					if !strings.Contains(is.Message, "format") {
						t.Errorf("%s %s: the message does not name the format: %q", kind, tc.name, is.Message)
					}
					got = append(got, Issue{Path: is.Path, Code: is.Code})
				}
				want := tc.want
				if !assert {
					want = nil
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s assert=%v %s: issues (-want +got):\n%s", kind, assert, tc.name, diff)
				}
				if blocked := d.Verdict == VerdictBlock; blocked != (len(want) > 0) {
					t.Errorf("%s assert=%v %s: verdict %s", kind, assert, tc.name, d.Verdict)
				}
			}
		}
	}

	// The catalog file's member, and its type checked.
	file := `{"builtins":false,"operations":[{"provider":"p","name":"t","assertFormat":true,"schema":` + schemas["full"] + `}]}`
	c, err := DecodeCatalog([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Operations()[0].AssertFormat {
		t.Error("assertFormat: true was not decoded")
	}
	if d, _ := c.Decide(customCall("p", "t", `{"id":"nope"}`)); d == nil || d.Verdict != VerdictBlock {
		t.Errorf("a catalog file's assertFormat did not assert: %+v", d)
	}
	_, err = DecodeCatalog([]byte(`{"operations":[{"provider":"p","name":"t","assertFormat":"yes"}]}`))
	if e, ok := err.(*Error); !ok || len(e.Details) != 1 || e.Details[0].Path != "/operations/0/assertFormat" || e.Details[0].Code != IssueType {
		t.Errorf("assertFormat of the wrong type: %v", err)
	}
	// A schema error is reported as without assertion.
	_, err = NewCatalog(Operation{Provider: "p", Name: "t", Schema: json.RawMessage(`{"type":"object","minLength":-1}`), AssertFormat: true})
	if e, ok := err.(*Error); !ok || e.Code != ErrorInvalidSchema || e.Details[0].Path != "/0/schema/minLength" {
		t.Errorf("an ill-formed schema with AssertFormat: %v", err)
	}
}
