package preflight

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCheckArgumentsMatchesDecide: on every real tool schema (the captured
// MCP servers' and testdata/catalog's), CheckArguments reports exactly the
// issues Decide blocks a call with (INVALID_PAYLOAD), pointing into the
// arguments instead of /tool/request (in messages too), and none when Decide does not block
// for the arguments.
func TestCheckArgumentsMatchesDecide(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "catalog", "*.tools.json"))
	captured, _ := filepath.Glob(filepath.Join("testdata", "mcp-tools", "*.tools.json"))
	files = append(files, captured...)
	compared, blocked := 0, 0
	for _, f := range files {
		for _, tool := range readTools(t, f) {
			c, err := NewCatalog(Operation{Provider: "p", Name: "t", Schema: tool.InputSchema})
			if err != nil {
				t.Fatalf("%s %s: %v", f, tool.Name, err)
			}
			for _, args := range toolArguments(t, tool.InputSchema) {
				got, err := c.CheckArguments("p", "t", args)
				if err != nil {
					t.Fatalf("%s %s %s: %v", f, tool.Name, args, err)
				}
				d, err := c.Decide(customCall("p", "t", string(args)))
				if err != nil {
					t.Fatal(err)
				}
				var want []Issue
				if d.Verdict == VerdictBlock && d.ReasonCodes[0] == ReasonInvalidPayload {
					blocked++
					for _, is := range d.Issues {
						is.Path = strings.TrimPrefix(is.Path, "/tool/request")
						// Messages of anyOf and oneOf name their branches' pointers.
						is.Message = strings.ReplaceAll(is.Message, "/tool/request", "")
						want = append(want, is)
					}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s %s %s: CheckArguments differs from Decide (-decide +CheckArguments):\n%s", f, tool.Name, args, diff)
				}
				compared++
			}
		}
	}
	if compared < 1000 {
		t.Errorf("%d arguments compared; the test data is missing", compared)
	}
	t.Logf("%d arguments compared, %d blocked", compared, blocked)
}

// toolArguments are arguments for a tool of schema: {}, a value of each
// property's declared type, and that with each property set to a value of
// another kind.
func toolArguments(t *testing.T, schema json.RawMessage) [][]byte {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &s) // a schema without properties gets {} alone
	typed := map[string]any{}
	for name, p := range s.Properties {
		ty, _ := p.Type.(string)
		if tys, ok := p.Type.([]any); ok && len(tys) > 0 {
			ty, _ = tys[0].(string)
		}
		typed[name] = map[string]any{"string": "abc", "integer": 5, "number": 2.5, "boolean": true,
			"array": []any{"a"}, "object": map[string]any{}, "null": nil}[ty]
	}
	out := [][]byte{[]byte(`{}`)}
	add := func(m map[string]any) {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	add(typed)
	for name := range typed {
		for _, wrong := range []any{"x", -1, []any{1}, map[string]any{"k": 1}} {
			m := map[string]any{}
			for k, v := range typed {
				m[k] = v
			}
			m[name] = wrong
			add(m)
		}
	}
	return out
}

// TestCheckArgumentsErrors: what is not an object of arguments, or names
// no operation, is an error, as Decide's input rules make it one.
func TestCheckArgumentsErrors(t *testing.T) {
	c, err := NewCatalog(Operation{Provider: "p", Name: "t", Aliases: []string{"alias"},
		Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","pattern":"^(a|aa)*$"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat(`{"a":`, maxToolCallDepth+1) + "1" + strings.Repeat("}", maxToolCallDepth+1)
	tests := []struct {
		op, args string
		code     ErrorCode
		detail   IssueCode
	}{
		{"t", `{"q":`, ErrorInvalidJSON, IssueInvalidJSON},
		{"t", `{"q":"a","q":"b"}`, ErrorInvalidJSON, IssueDuplicateKey},
		{"t", `[]`, ErrorInvalidRequest, IssueType},
		{"t", `"q"`, ErrorInvalidRequest, IssueType},
		{"u", `{}`, ErrorInvalidRequest, IssueUnknownOperation},
		{"t", deep, ErrorLimitExceeded, IssueMaxDepth},
	}
	for _, tt := range tests {
		_, err := c.CheckArguments("p", tt.op, []byte(tt.args))
		var e *Error
		if !errors.As(err, &e) || e.Code != tt.code || len(e.Details) == 0 || e.Details[0].Code != tt.detail {
			t.Errorf("%s %.40s: got %v, want %s with a %s detail", tt.op, tt.args, err, tt.code, tt.detail)
		}
	}
	if issues, err := c.CheckArguments("p", "alias", []byte(`{"q":"aaa"}`)); err != nil || issues != nil {
		t.Errorf("an alias with valid arguments: %v, %v; want no issues", issues, err)
	}
}
