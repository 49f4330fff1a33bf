package benchmarks

// Tool schemas as MCP servers list them (the core's testdata/catalog, the
// tools/list of real servers captured under testdata/mcp-tools and the
// reference server's own tools/list), validated by preflight's tool
// path (a catalog built from the schema, then Decide) and by the two
// peers. Most of these schemas are outside the twelve-keyword subset of
// /check-request (draft-07 $schema, anyOf, format, minItems,
// exclusiveMinimum), so preflight's full validator is what is measured
// for them.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	googleschema "github.com/google/jsonschema-go/jsonschema"
	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
)

type realTool struct {
	name   string
	schema []byte
	args   []byte // arguments: {} (a tool with required members rejects it)
	typed  []byte // every listed property a value of its declared type
}

func realTools(tb testing.TB) []realTool {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "catalog", "*.tools.json"))
	captured, _ := filepath.Glob(filepath.Join("..", "testdata", "mcp-tools", "*.tools.json"))
	files = append(files, captured...)
	files = append(files, filepath.Join("..", "server", "testdata", "mcp_tools_list.golden"))
	sort.Strings(files)
	var out []realTool
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var doc struct {
			Tools []struct {
				Name        string
				InputSchema json.RawMessage
			} `json:"tools"`
			Result struct {
				Tools []struct {
					Name        string
					InputSchema json.RawMessage
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		for _, t := range append(doc.Tools, doc.Result.Tools...) {
			name := filepath.Base(filepath.Dir(f)) + "/" + strings.TrimSuffix(filepath.Base(f), ".tools.json") + "/" + t.Name
			out = append(out, realTool{name: name, schema: t.InputSchema, args: []byte(`{}`), typed: argumentVariants(tb, t.InputSchema)[1]})
		}
	}
	if len(out) < 10 {
		tb.Fatalf("%d real tools; the test data is missing", len(out))
	}
	return out
}

// decideRequest is a tool-call request for tool p/t with args.
func decideRequest(args []byte) *preflight.ToolCallRequest {
	return &preflight.ToolCallRequest{RunID: "run", StepID: "step",
		Tool:   preflight.ToolCall{Provider: "p", Operation: "t", Request: args, EstimatedExternalCostUSD: "0.001", EstimatedModelCostUSD: "0"},
		Budget: preflight.Budget{RemainingUSD: "10", ReservedUSD: "0", MaxToolCallsRemaining: "10"}}
}

// preflightValid is whether Decide on c found the arguments valid.
func preflightValid(tb testing.TB, c *preflight.Catalog, args []byte) bool {
	d, err := c.Decide(decideRequest(args))
	if err != nil {
		tb.Fatal(err)
	}
	return d.Verdict != preflight.VerdictBlock
}

// argumentVariants are arguments for a tool: {} and, for each kind of
// JSON value, every listed property set to a value of that kind (most are
// invalid somewhere, some valid).
func argumentVariants(tb testing.TB, schema []byte) [][]byte {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	out := [][]byte{[]byte(`{}`)}
	// A value of each property's declared type (the first, when a list),
	// then that object with one property at a time of another kind.
	typed := map[string]any{}
	for name, ps := range s.Properties {
		var p struct {
			Type json.RawMessage `json:"type"`
			Enum []any           `json:"enum"`
		}
		json.Unmarshal(ps, &p)
		var ty string
		if json.Unmarshal(p.Type, &ty) != nil {
			var tys []string
			if json.Unmarshal(p.Type, &tys) == nil && len(tys) > 0 {
				ty = tys[0]
			}
		}
		switch {
		case len(p.Enum) > 0:
			typed[name] = p.Enum[0]
		case ty == "string":
			typed[name] = "abc"
		case ty == "integer", ty == "number":
			typed[name] = 5
		case ty == "boolean":
			typed[name] = true
		case ty == "array":
			typed[name] = []any{}
		case ty == "object":
			typed[name] = map[string]any{}
		default:
			typed[name] = "abc"
		}
	}
	add := func(m map[string]any) {
		b, err := json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	add(typed)
	for name := range typed {
		for _, wrong := range []any{"abc", 5, 2.5, -1, nil, false, []any{"a"}, map[string]any{"k": 1}, "2024-13-01"} {
			m := map[string]any{}
			for k, v := range typed {
				m[k] = v
			}
			m[name] = wrong
			add(m)
		}
	}
	for _, v := range []any{"x", "2024-01-01T00:00:00Z", 1, -1.5, 0, nil, true, []any{}, []any{"a", 1}, map[string]any{}} {
		m := map[string]any{}
		for name := range s.Properties {
			m[name] = v
		}
		b, err := json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestToolSchemasAgree: on every real tool schema, preflight's tool path
// and santhosh-tekuri agree on whether each of argumentVariants is valid
// (format asserted by both in draft-07 schemas, by neither in 2020-12).
func TestToolSchemasAgree(t *testing.T) {
	n, valid := 0, 0
	tools := realTools(t)
	defer func() { t.Logf("%d tools, %d verdicts compared, %d valid", len(tools), n, valid) }()
	for _, tool := range tools {
		// santhosh-tekuri asserts format in draft-07 and older whatever it
		// is told: preflight does too there, for this comparison.
		var d struct {
			Schema string `json:"$schema"`
		}
		json.Unmarshal(tool.schema, &d)
		assert := strings.Contains(d.Schema, "json-schema.org/draft-0")
		c, err := preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "t", Schema: tool.schema, AssertFormat: assert})
		if err != nil {
			t.Errorf("%s: %v", tool.name, err)
			continue
		}
		sch, err := santhoshCompile(tool.schema)
		if err != nil {
			t.Fatalf("%s: santhosh: %v", tool.name, err)
		}
		for _, args := range argumentVariants(t, tool.schema) {
			want, err := santhoshValidate(sch, args)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if want {
				valid++
			}
			if got := preflightValid(t, c, args); got != want {
				t.Errorf("%s %s: preflight valid=%v, santhosh valid=%v", tool.name, args, got, want)
			}
		}
	}
}

// BenchmarkToolSchemas validates arguments against every real tool
// schema once per iteration, bytes in to verdict out on every side: each
// implementation parses the arguments' bytes inside the loop. Rows are
// args=empty ({}, which most tools refuse for a missing required member)
// and args=typed (every listed property given a value of its declared
// type, which most accept); columns are impl=:
//
//   - preflight_cold: a catalog built from the schema, with preflight's
//     cache of compiled schemas off, then Catalog.CheckArguments;
//   - santhosh_cold, google_cold: compile (resolve) the schema, then
//     parse and validate;
//   - preflight_warm: Catalog.CheckArguments on a catalog built before
//     the loop (parse the arguments, validate them, build the issues);
//   - preflight_warm_decide: Catalog.Decide of a whole tool call with those
//     arguments (also the request's fingerprint, a SHA-256 over its
//     canonical form, the history and budget rules and the decision);
//   - santhosh_warm, google_warm: a schema compiled before the loop,
//     parse and validate.
func BenchmarkToolSchemas(b *testing.B) {
	tools := realTools(b)
	for _, set := range []struct {
		name string
		args func(realTool) []byte
	}{{"empty", func(t realTool) []byte { return t.args }}, {"typed", func(t realTool) []byte { return t.typed }}} {
		args := make([][]byte, len(tools))
		for i, tool := range tools {
			args[i] = set.args(tool)
		}
		b.Run("args="+set.name, func(b *testing.B) {
			b.Run("impl=preflight_cold", func(b *testing.B) {
				prev := preflight.SetSchemaCacheLimits(preflight.SchemaCacheLimits{})
				defer preflight.SetSchemaCacheLimits(prev)
				measureTools(b, func() {
					for i, tool := range tools {
						c, err := preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "t", Schema: tool.schema})
						if err != nil {
							b.Fatal(err)
						}
						if _, err := c.CheckArguments("p", "t", args[i]); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("impl=santhosh_cold", func(b *testing.B) {
				measureTools(b, func() {
					for i, tool := range tools {
						sch, err := santhoshCompile(tool.schema)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := santhoshValidate(sch, args[i]); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("impl=google_cold", func(b *testing.B) {
				measureTools(b, func() {
					for i, tool := range tools {
						rs, err := googleResolve(tool.schema)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := googleValidate(rs, args[i]); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			cats := make([]*preflight.Catalog, len(tools))
			for i, tool := range tools {
				var err error
				if cats[i], err = preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "t", Schema: tool.schema}); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("impl=preflight_warm", func(b *testing.B) {
				measureTools(b, func() {
					for i := range tools {
						if _, err := cats[i].CheckArguments("p", "t", args[i]); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("impl=preflight_warm_decide", func(b *testing.B) {
				measureTools(b, func() {
					for i := range tools {
						preflightValid(b, cats[i], args[i])
					}
				})
			})
			b.Run("impl=santhosh_warm", func(b *testing.B) {
				schs := make([]*santhosh.Schema, len(tools))
				for i, tool := range tools {
					schs[i], _ = santhoshCompile(tool.schema)
				}
				measureTools(b, func() {
					for i := range tools {
						if _, err := santhoshValidate(schs[i], args[i]); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("impl=google_warm", func(b *testing.B) {
				rss := make([]*googleschema.Resolved, len(tools))
				for i, tool := range tools {
					rss[i], _ = googleResolve(tool.schema)
				}
				measureTools(b, func() {
					for i := range tools {
						if _, err := googleValidate(rss[i], args[i]); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		})
	}
}

// measureTools is measure for a loop over every tool.
func measureTools(b *testing.B, all func()) {
	measure(b, func() (bool, error) { all(); return true, nil })
}

// BenchmarkToolSchemaCold is BenchmarkToolSchemas' cold runs one tool at a
// time (sub-benchmarks tool=FILE/NAME/IMPL), for a per-tool comparison:
//
//	go test -run '^$' -bench 'ToolSchemaCold' -benchtime 300x ./benchmarks
func BenchmarkToolSchemaCold(b *testing.B) {
	for _, tool := range realTools(b) {
		b.Run("tool="+tool.name+"/preflight", func(b *testing.B) {
			for b.Loop() {
				c, err := preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "t", Schema: tool.schema})
				if err != nil {
					b.Fatal(err)
				}
				preflightValid(b, c, tool.args)
			}
		})
		b.Run("tool="+tool.name+"/santhosh", func(b *testing.B) {
			for b.Loop() {
				sch, err := santhoshCompile(tool.schema)
				if err != nil {
					b.Fatal(err)
				}
				santhoshValidate(sch, tool.args)
			}
		})
		b.Run("tool="+tool.name+"/google", func(b *testing.B) {
			for b.Loop() {
				rs, err := googleResolve(tool.schema)
				if err != nil {
					b.Fatal(err)
				}
				googleValidate(rs, tool.args)
			}
		})
	}
}
