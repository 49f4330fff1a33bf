// Package ajvinterop checks preflight's tool-schema validator against a
// second, independent one: ajv (pinned in package.json and
// package-lock.json; its draft-07 build for draft-07 schemas, its 2020 build
// otherwise), on the tool schemas of real MCP servers captured under
// testdata/mcp-tools (inputSchema and outputSchema). For every schema,
// instances made from it (one meant to be valid, and many mutations of
// it) are judged by both; they must agree on every one.
package ajvinterop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// capturedTool is one tool of a captured tools/list.
type capturedTool struct {
	server string
	name   string
	schema json.RawMessage
}

// capturedTools reads every tool of testdata/mcp-tools: its inputSchema
// and, when it has one, its outputSchema (as a tool of its own).
func capturedTools(t *testing.T) []capturedTool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "testdata", "mcp-tools", "*.tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []capturedTool
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tools []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		server := strings.TrimSuffix(filepath.Base(f), ".tools.json")
		for _, tool := range doc.Tools {
			out = append(out, capturedTool{server: server, name: tool.Name, schema: tool.InputSchema})
			if len(tool.OutputSchema) > 0 {
				out = append(out, capturedTool{server: server, name: tool.Name + " (outputSchema)", schema: tool.OutputSchema})
			}
		}
	}
	if len(files) < 10 || len(out) < 100 {
		t.Fatalf("%d captured servers, %d tools: the test data is missing", len(files), len(out))
	}
	return out
}

// TestAjvAgrees runs every captured tool's arguments through preflight
// (a catalog of that one tool, then Decide) and through ajv
// (verdicts.mjs), and fails on any instance where the two disagree on
// validity, or on a schema only one of them compiles.
func TestAjvAgrees(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testpart.Missing(t, fmt.Sprintf("node is not installed (%v); install Node.js 20 or newer, then run npm ci in server/interop/ajv", err))
	}
	if _, err := os.Stat(filepath.Join("node_modules", "ajv", "package.json")); err != nil {
		testpart.Missing(t, fmt.Sprintf("server/interop/ajv/node_modules is missing (%v); run npm ci in server/interop/ajv", err))
	}
	tools := capturedTools(t)

	type ajvCase struct {
		Schema    json.RawMessage   `json:"schema"`
		Instances []json.RawMessage `json:"instances"`
	}
	cases := make([]ajvCase, len(tools))
	for i, tool := range tools {
		insts, err := instancesFor(tool.schema)
		if err != nil {
			t.Fatalf("%s/%s: %v", tool.server, tool.name, err)
		}
		cases[i] = ajvCase{Schema: tool.schema, Instances: insts}
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(file, in, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "verdicts.mjs", file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verdicts.mjs: %v\n%s", err, stderr.Bytes())
	}
	var verdicts []struct {
		Valid []bool `json:"valid"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(cases) {
		t.Fatalf("ajv's answer (%v): %d verdicts for %d cases", err, len(verdicts), len(cases))
	}

	compared, valid, disagreements := 0, 0, 0
	for i, tool := range tools {
		label := tool.server + "/" + tool.name
		cat, cerr := preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "t", Schema: tool.schema})
		switch {
		case cerr != nil && verdicts[i].Error != "":
			t.Errorf("%s: neither compiles (preflight: %v; ajv: %s)", label, cerr, verdicts[i].Error)
			continue
		case cerr != nil:
			t.Errorf("%s: ajv compiles it, preflight does not: %v", label, cerr)
			continue
		case verdicts[i].Error != "":
			t.Errorf("%s: preflight compiles it, ajv does not: %s", label, verdicts[i].Error)
			continue
		}
		for j, inst := range cases[i].Instances {
			d, err := cat.Decide(&preflight.ToolCallRequest{RunID: "run", StepID: "step",
				Tool:   preflight.ToolCall{Provider: "p", Operation: "t", Request: inst, EstimatedExternalCostUSD: "0.001", EstimatedModelCostUSD: "0"},
				Budget: preflight.Budget{RemainingUSD: "10", ReservedUSD: "0", MaxToolCallsRemaining: "10"}})
			if err != nil {
				t.Fatalf("%s %s: Decide: %v", label, inst, err)
			}
			got := d.Verdict != preflight.VerdictBlock
			want := verdicts[i].Valid[j]
			compared++
			if want {
				valid++
			}
			if got != want {
				disagreements++
				t.Errorf("%s %s: preflight valid=%v (%v), ajv valid=%v", label, inst, got, d.Issues, want)
			}
		}
	}
	t.Logf("%d tools, %d instances compared (%d valid per ajv), %d disagreements", len(tools), compared, valid, disagreements)
	// The generated instances must exercise both verdicts broadly.
	if valid < len(tools) || compared-valid < 10*len(tools) {
		t.Errorf("%d valid and %d invalid instances for %d tools: the generator no longer reaches both sides", valid, compared-valid, len(tools))
	}
}

// instancesFor makes arguments for a tool from its schema: one built to be
// valid (sample), {} and, for each top-level property (and each property
// of an object-valued one), the sample with that property removed or set
// to a value of each kind; then every property at once set to one value.
// The result is deterministic and free of duplicates.
func instancesFor(schema json.RawMessage) ([]json.RawMessage, error) {
	var root any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	g := &generator{root: root}
	base, _ := g.sample(root, 0).(map[string]any)
	if base == nil {
		base = map[string]any{}
	}
	var out []json.RawMessage
	seen := map[string]bool{}
	add := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, b)
		}
		return nil
	}
	wrong := []any{"abc", "", json.Number("7"), json.Number("2.5"), json.Number("-1"), json.Number("0"),
		nil, false, true, []any{}, []any{"a", json.Number("1")}, map[string]any{},
		map[string]any{"k": json.Number("1")}, "2024-13-01T00:00:00Z", "2024-01-01T00:00:00Z",
		"https://example.com/x", "not a uri", strings.Repeat("x", 300)}
	mutate := func(obj map[string]any, set func(map[string]any) map[string]any) error {
		for _, k := range sortedKeys(obj) {
			c := clone(obj)
			delete(c, k)
			if err := add(set(c)); err != nil {
				return err
			}
			for _, w := range wrong {
				c := clone(obj)
				c[k] = w
				if err := add(set(c)); err != nil {
					return err
				}
			}
			if arr, ok := obj[k].([]any); ok {
				for _, w := range wrong {
					c := clone(obj)
					c[k] = append(slices.Clone(arr), w)
					if err := add(set(c)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := add(base); err != nil {
		return nil, err
	}
	if err := add(map[string]any{}); err != nil {
		return nil, err
	}
	extra := clone(base)
	extra["zz_unlisted"] = json.Number("1")
	if err := add(extra); err != nil {
		return nil, err
	}
	if err := mutate(base, func(m map[string]any) map[string]any { return m }); err != nil {
		return nil, err
	}
	for _, k := range sortedKeys(base) {
		inner, ok := base[k].(map[string]any)
		if !ok {
			continue
		}
		err := mutate(inner, func(m map[string]any) map[string]any {
			c := clone(base)
			c[k] = m
			return c
		})
		if err != nil {
			return nil, err
		}
	}
	for _, w := range wrong {
		c := map[string]any{}
		for k := range base {
			c[k] = w
		}
		if err := add(c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// generator builds a value meant to satisfy a schema: enough of the
// vocabulary real tool schemas use (local $ref, the composition keywords'
// first branch, type, enum, const, bounds), deterministic. It need not
// always succeed: the verdict on its value is compared, not assumed.
type generator struct{ root any }

// resolve follows a local $ref ("#" or "#/json/pointer"); anything else
// is returned as is.
func (g *generator) resolve(s map[string]any) map[string]any {
	for range 20 {
		ref, ok := s["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return s
		}
		var cur any = g.root
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			m, _ := cur.(map[string]any)
			cur = m[tok]
		}
		next, ok := cur.(map[string]any)
		if !ok {
			return s
		}
		merged := clone(next)
		for k, v := range s {
			if k != "$ref" {
				merged[k] = v
			}
		}
		s = merged
	}
	return s
}

func (g *generator) sample(schema any, depth int) any {
	s, ok := schema.(map[string]any)
	if !ok || depth > 8 {
		return nil
	}
	s = g.resolve(s)
	if v, ok := s["const"]; ok {
		return v
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if d, ok := s["default"]; ok {
		return d
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if bs, ok := s[kw].([]any); ok && len(bs) > 0 {
			for _, b := range bs { // the first branch that is not only null
				if bm, ok := b.(map[string]any); ok && bm["type"] != "null" {
					return g.sample(b, depth+1)
				}
			}
			return g.sample(bs[0], depth+1)
		}
	}
	if bs, ok := s["allOf"].([]any); ok && len(bs) > 0 {
		merged := map[string]any{}
		for _, b := range bs {
			if m, ok := g.sample(b, depth+1).(map[string]any); ok {
				for k, v := range m {
					merged[k] = v
				}
			}
		}
		if _, has := s["properties"]; !has {
			return merged
		}
	}
	ty := ""
	switch t := s["type"].(type) {
	case string:
		ty = t
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok && x != "null" {
				ty = x
				break
			}
		}
	}
	if ty == "" {
		if _, ok := s["properties"]; ok {
			ty = "object"
		}
	}
	switch ty {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for _, k := range sortedKeys(props) {
			out[k] = g.sample(props[k], depth+1)
		}
		return out
	case "array":
		n := 1
		if m, ok := s["minItems"].(json.Number); ok {
			if v, err := m.Int64(); err == nil && v > 1 && v < 10 {
				n = int(v)
			}
		}
		out := []any{}
		for i := range n {
			v := g.sample(s["items"], depth+1)
			if s, ok := v.(string); ok && i > 0 {
				v = fmt.Sprintf("%s%d", s, i) // uniqueItems
			}
			out = append(out, v)
		}
		return out
	case "string":
		switch s["format"] {
		case "date-time":
			return "2024-01-01T00:00:00Z"
		case "date":
			return "2024-01-01"
		case "uri", "url":
			return "https://example.com/"
		case "email":
			return "a@example.com"
		case "uuid":
			return "123e4567-e89b-12d3-a456-426614174000"
		}
		v := "abc"
		if m, ok := s["minLength"].(json.Number); ok {
			if n, err := m.Int64(); err == nil && n > 3 && n < 100 {
				v = strings.Repeat("a", int(n))
			}
		}
		return v
	case "integer", "number":
		for _, kw := range []string{"minimum", "exclusiveMinimum"} {
			if m, ok := s[kw].(json.Number); ok {
				if v, err := m.Int64(); err == nil {
					return json.Number(fmt.Sprint(v + 1))
				}
			}
		}
		return json.Number("1")
	case "boolean":
		return true
	case "null":
		return nil
	}
	return "abc"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
