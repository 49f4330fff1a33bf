package preflight

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeCatalogFile(t *testing.T) {
	data, err := os.ReadFile("testdata/catalog/operations.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range c.Operations() {
		e, _ := c.EffectsOf(op.Provider, op.Name)
		got = append(got, op.Provider+"/"+op.Name+" "+e.String())
	}
	want := []string{"search/web_search read_only", "browse/fetch read_only", "marketdata/get_quote read_only",
		"email/send_email side_effecting", "github/delete_branch destructive"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operations (-want +got):\n%s", diff)
	}
	if d, err := c.Decide(customCall("browse", "fetch", `{"url":"/relative"}`)); err != nil || d.Verdict != VerdictBlock ||
		d.Issues[0].Code != IssueAbsoluteURL {
		t.Errorf("browse rule lost in a decoded catalog: %+v %v", d, err)
	}
	// Without the built-ins, a file may define search/web_search itself.
	own, err := DecodeCatalog([]byte(`{"builtins": false, "operations": [{"provider": "search", "name": "web_search"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if ops := own.Operations(); len(ops) != 1 || ops[0].Schema != nil {
		t.Errorf("builtins false: %+v", ops)
	}
	d, err := c.Decide(customCall("marketdata", "quote", `{"symbol":"ACME","fields":["bid"]}`))
	if err != nil || d.Verdict != VerdictAllow {
		t.Errorf("quote: %+v %v", d, err)
	}
}

func TestDecodeCatalogErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		code ErrorCode
		want []Issue
	}{
		{"not JSON", `{"operations": [}`, ErrorInvalidJSON, nil},
		{"duplicate member", `{"operations": [{"provider": "a", "name": "b", "name": "c"}]}`, ErrorInvalidJSON, nil},
		{"not an object", `[]`, ErrorInvalidRequest, []Issue{{Path: "", Code: IssueType, Message: "expected an object, found array"}}},
		{"operations missing", `{}`, ErrorInvalidRequest, []Issue{{Path: "/operations", Code: IssueRequired, Message: `missing required member "operations"`}}},
		{"unknown members and bad values", `{"operationz": 1, "operations": [
			{"provider": "a", "name": "", "inputSchema": {}, "aliases": "x", "effects": "readonly",
			 "annotations": {"readOnlyHint": "yes", "note": 1}}]}`, ErrorInvalidRequest, []Issue{
			{Path: "/operationz", Code: IssueUnknownField, Message: `unknown member "operationz"; expected one of "$schema", "builtins", "operations"`},
			{Path: "/operations/0/inputSchema", Code: IssueUnknownField, Message: `unknown member "inputSchema"; expected one of "provider", "name", "aliases", "schema", "effects", "annotations", "assertFormat"`},
			{Path: "/operations/0/name", Code: IssueMinLength, Message: "expected a non-empty string"},
			{Path: "/operations/0/aliases", Code: IssueType, Message: "expected an array of operation names, found string"},
			{Path: "/operations/0/effects", Code: IssueEnum, Message: `expected one of "read_only", "side_effecting", "destructive", found "readonly"`},
			{Path: "/operations/0/annotations/note", Code: IssueUnknownField, Message: `unknown member "note"; expected one of "title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"`},
			{Path: "/operations/0/annotations/readOnlyHint", Code: IssueType, Message: "expected a boolean, found string"},
		}},
		{"bad schema", `{"operations": [{"provider": "a", "name": "b"},
			{"provider": "a", "name": "c", "schema": {"type": "object", "properties": {"x": {"oneOf": []}}}}]}`,
			ErrorInvalidSchema, []Issue{
				{Path: "/operations/1/schema/properties/x/oneOf", Code: IssueInvalidSchema, Message: `expected a non-empty array of schemas, found []`},
			}},
		{"a built-in repeated", `{"operations": [{"provider": "search", "name": "web_search"}]}`,
			ErrorInvalidRequest, []Issue{
				{Path: "/operations/0/name", Code: IssueDuplicateOperation, Message: `operation "search/web_search" is a built-in operation`},
			}},
		{"duplicate operation", `{"operations": [{"provider": "a", "name": "b"}, {"provider": "a", "name": "c", "aliases": ["b"]}]}`,
			ErrorInvalidRequest, []Issue{
				{Path: "/operations/1/aliases/0", Code: IssueDuplicateOperation, Message: `operation "a/b" is already declared at /operations/0`},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeCatalog([]byte(tc.file))
			var e *Error
			if !errors.As(err, &e) || c != nil {
				t.Fatalf("DecodeCatalog = %v, %v; want an *Error", c, err)
			}
			if e.Code != tc.code {
				t.Errorf("code %s, want %s (%v)", e.Code, tc.code, e)
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, e.Details); diff != "" {
					t.Errorf("details (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// FuzzDecodeCatalog: arbitrary bytes give a catalog or an *Error, never a
// panic, and a catalog decides a call.
func FuzzDecodeCatalog(f *testing.F) {
	addSeeds(f, "testdata/catalog/*.json")
	f.Add([]byte(`{"operations":[{"provider":"a","name":"b","aliases":["c"],"effects":"destructive","schema":{"type":"object"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCatalog(data)
		if err != nil {
			checkEnvelope(t, err)
			return
		}
		for _, op := range c.Operations() {
			if _, err := c.Decide(customCall(op.Provider, op.Name, `{}`)); err != nil {
				t.Fatalf("Decide with a decoded catalog: %v", err)
			}
		}
	})
}
