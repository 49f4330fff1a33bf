package mcpguard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/google/go-cmp/cmp"
)

// getSumTool is the get-sum tool as @modelcontextprotocol/server-everything
// 2026.8.31 lists it (its inputSchema comes from the TypeScript SDK, which
// names draft-07), with the $schema replaced by %s.
const getSumTool = `{"tools":[{"name":"get-sum","title":"Get Sum Tool","description":"Returns the sum of two numbers",` +
	`"inputSchema":{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},"required":["a","b"]%s},` +
	`"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}}]}`

// TestInputSchemaDialects: a tool whose inputSchema names 2020-12,
// draft-07, draft-06 or 2019-09 (or nothing) has its arguments checked in
// that dialect; one that names another dialect is not used, the tool
// takes any object, a warning names the tool and the reason, and the
// call's CallReport carries the reason.
func TestInputSchemaDialects(t *testing.T) {
	checked := []string{
		`,"$schema":"http://json-schema.org/draft-07/schema#"`, // what server-everything sends
		`,"$schema":"http://json-schema.org/draft-07/schema"`,
		`,"$schema":"https://json-schema.org/draft-07/schema#"`,
		`,"$schema":"http://json-schema.org/draft-06/schema#"`,
		`,"$schema":"https://json-schema.org/draft/2019-09/schema"`,
		`,"$schema":"https://json-schema.org/draft/2019-09/schema#"`,
		`,"$schema":"https://json-schema.org/draft/2020-12/schema"`,
		`,"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"number"}]`, // draft-07's array form
		`,"$defs":{"n":{"type":"number"}},"anyOf":[{"properties":{"a":{"$ref":"#/$defs/n"}}}]`,
		``,
	}
	anyObject := []string{
		`,"$schema":"http://json-schema.org/draft-04/schema#"`,
		`,"$schema":"http://example.com/my-dialect"`,
		`,"$schema":7`,
		`,"properties":{"a":{"$ref":"https://example.com/number.json"}}`, // never fetched
	}
	// In draft-07 a $ref overrides its siblings: the schema is the empty
	// definition x, so both calls are forwarded, and no warning is logged.
	draft07Ref := `,"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/x","definitions":{"x":{}}`
	type outcome struct {
		Forwarded   int
		IsError     bool
		ReasonCodes []string
		Unchecked   bool // the CallReport says the schema was not used
	}
	bad := `{"name":"get-sum","arguments":{"a":"x","b":2}}`
	good := `{"name":"get-sum","arguments":{"a":1,"b":2}}`
	var logged bytes.Buffer
	run := func(t *testing.T, extra, params string) outcome {
		t.Helper()
		logged.Reset()
		s, err := mcpguard.NewSession(&mcpguard.Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		if err != nil {
			t.Fatal(err)
		}
		s.SawToolsList("", json.RawMessage(strings.Replace(getSumTool, "%s", extra, 1)))
		var o outcome
		var report mcpguard.CallReport
		ctx := mcpguard.WithCallReport(context.Background(), &report)
		out, err := s.CallTool(ctx, json.RawMessage(params), func(context.Context) (json.RawMessage, error) {
			o.Forwarded++
			return json.RawMessage(`{"content":[{"type":"text","text":"The sum of 1 and 2 is 3."}]}`), nil
		})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		var res struct {
			IsError bool                       `json:"isError"`
			Meta    map[string]json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("result %s: %v", out, err)
		}
		o.IsError = res.IsError
		o.Unchecked = report.SchemaUnchecked != ""
		if o.Unchecked && !strings.Contains(logged.String(), "reason="+strconv.Quote(report.SchemaUnchecked)) {
			t.Errorf("CallReport reason %q is not the one logged: %s", report.SchemaUnchecked, logged.String())
		}
		if d, ok := res.Meta[mcpguard.MetaKey]; ok {
			var w mcpguard.Withheld
			json.Unmarshal(d, &w)
			for _, c := range w.ReasonCodes {
				o.ReasonCodes = append(o.ReasonCodes, string(c))
			}
		}
		return o
	}
	for _, extra := range checked {
		t.Run("checked"+extra, func(t *testing.T) {
			if d := cmp.Diff(outcome{Forwarded: 0, IsError: true, ReasonCodes: []string{"INVALID_PAYLOAD"}}, run(t, extra, bad)); d != "" {
				t.Errorf("get-sum {a:\"x\",b:2} (-want +got):\n%s", d)
			}
			if d := cmp.Diff(outcome{Forwarded: 1}, run(t, extra, good)); d != "" {
				t.Errorf("get-sum {a:1,b:2} (-want +got):\n%s", d)
			}
			if logged.Len() > 0 {
				t.Errorf("logged for a usable schema: %s", logged.String())
			}
		})
	}
	t.Run("draft-07 $ref overrides its siblings", func(t *testing.T) {
		if d := cmp.Diff(outcome{Forwarded: 1}, run(t, draft07Ref, bad)); d != "" {
			t.Errorf("get-sum {a:\"x\",b:2} (-want +got):\n%s", d)
		}
		if logged.Len() > 0 {
			t.Errorf("logged for a usable schema: %s", logged.String())
		}
	})
	for _, extra := range anyObject {
		t.Run("any object"+extra, func(t *testing.T) {
			if d := cmp.Diff(outcome{Forwarded: 1, Unchecked: true}, run(t, extra, bad)); d != "" {
				t.Errorf("get-sum {a:\"x\",b:2} with a schema preflight does not use (-want +got):\n%s", d)
			}
			if line := logged.String(); !strings.Contains(line, "level=WARN") || !strings.Contains(line, "tool=get-sum") || !strings.Contains(line, "reason=") {
				t.Errorf("no warning naming the tool and the reason; logged %q", line)
			} else {
				t.Log(strings.TrimSpace(line))
			}
		})
	}
}
