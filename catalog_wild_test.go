package preflight

import (
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mcpTool is a tool description as tools/list returns it.
type mcpTool struct {
	Name        string           `json:"name"`
	InputSchema json.RawMessage  `json:"inputSchema"`
	Annotations *ToolAnnotations `json:"annotations"`
}

// readTools reads the tools of a tools/list result (or a JSON-RPC
// response carrying one).
func readTools(t *testing.T, file string) []mcpTool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tools  []mcpTool `json:"tools"`
		Result struct {
			Tools []mcpTool `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return append(doc.Tools, doc.Result.Tools...)
}

// TestCatalogFromRealToolSchemas builds a catalog entry from the
// inputSchema of real MCP tools: this project's own (the server's tools/list
// answer), those written down under testdata/catalog and the tools/list
// answers of real servers captured under testdata/mcp-tools. Every tool
// compiles (before the full vocabulary, minItems, anyOf, format and
// exclusiveMinimum left five unchecked); all go into one catalog that
// decides a call of each.
func TestCatalogFromRealToolSchemas(t *testing.T) {
	sources := map[string]string{"preflight": filepath.Join("server", "testdata", "mcp_tools_list.golden")}
	files, _ := filepath.Glob(filepath.Join("testdata", "catalog", "*.tools.json"))
	for _, f := range files {
		sources[strings.TrimSuffix(filepath.Base(f), ".tools.json")] = f
	}
	// The tools/list answers of real MCP servers, as captured from npm.
	captured, _ := filepath.Glob(filepath.Join("testdata", "mcp-tools", "*.tools.json"))
	for _, f := range captured {
		sources["npm-"+strings.TrimSuffix(filepath.Base(f), ".tools.json")] = f
	}
	if len(captured) < 10 {
		t.Errorf("%d captured servers under testdata/mcp-tools, want at least 10", len(captured))
	}
	// Their outputSchemas (which mcpguard checks results against) compile too.
	outputs := 0
	for _, f := range captured {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tool := range doc.Tools {
			if len(tool.OutputSchema) == 0 {
				continue
			}
			outputs++
			if _, err := NewCatalog(Operation{Provider: "p", Name: "n", Schema: tool.OutputSchema}); err != nil {
				t.Errorf("%s %s: outputSchema: %v", f, tool.Name, err)
			}
		}
	}
	if len(captured) >= 10 && outputs < 10 {
		t.Errorf("%d outputSchemas under testdata/mcp-tools; the test data is missing", outputs)
	}
	// Which keywords make a tool's schema fail; absent means it compiles.
	// Every one compiles in the full vocabulary (format is an annotation).
	wantFailing := map[string][]string{}
	gotFailing := map[string][]string{}
	var ok []Operation
	total := 0
	for provider, file := range sources {
		for _, tool := range readTools(t, file) {
			total++
			op := Operation{Provider: provider, Name: tool.Name, Schema: tool.InputSchema, Annotations: tool.Annotations}
			_, err := NewCatalog(op)
			if err == nil {
				ok = append(ok, op)
				continue
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != ErrorUnsupportedSchemaKeyword {
				t.Errorf("%s/%s: %v, want only unsupported keywords", provider, tool.Name, err)
				continue
			}
			for _, d := range e.Details {
				kw := path.Base(d.Path)
				if !slices.Contains(gotFailing[provider+"/"+tool.Name], kw) {
					gotFailing[provider+"/"+tool.Name] = append(gotFailing[provider+"/"+tool.Name], kw)
				}
			}
		}
	}
	if diff := cmp.Diff(wantFailing, gotFailing); diff != "" {
		t.Errorf("keywords that made schemas fail (-want +got):\n%s", diff)
	}
	if len(sources) < 5 || len(ok) < 8 {
		t.Fatalf("%d sources, %d of %d tools compiled; the test data is missing", len(sources), len(ok), total)
	}
	t.Logf("%d of %d real tool schemas compiled", len(ok), total)

	c, err := NewCatalog(ok...)
	if err != nil {
		t.Fatal(err)
	}
	decide := func(provider, operation, payload string) *ToolCallDecision {
		d, err := c.Decide(customCall(provider, operation, payload))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := decide("github", "create_issue", `{"owner":"o","repo":"r"}`); d.Verdict != VerdictBlock ||
		len(d.Issues) != 1 || d.Issues[0].Path != "/tool/request/title" {
		t.Errorf("create_issue without a title: %s %v %v", d.Verdict, d.ReasonCodes, d.Issues)
	}
	if d := decide("github", "merge_pull_request", `{"owner":"o","repo":"r","pullNumber":1,"merge_method":"fast-forward"}`); d.Verdict != VerdictBlock ||
		d.Issues[0].Code != IssueEnum {
		t.Errorf("merge with an unknown method: %s %v %v", d.Verdict, d.ReasonCodes, d.Issues)
	}
	if d := decide("brave-search", "brave_web_search", `{"query":"mcp","count":5}`); d.Verdict != VerdictAllow {
		t.Errorf("brave_web_search: %s %v %v", d.Verdict, d.ReasonCodes, d.Issues)
	}
	if d := decide("preflight", "check_request", `{"request":{"method":"GET","url":"https://example.com/"},"schema":{}}`); d.Verdict != VerdictAllow {
		t.Errorf("check_request: %s %v %v", d.Verdict, d.ReasonCodes, d.Issues)
	}
	effects := map[string]Effects{
		"github/get_issue":              EffectsReadOnly,
		"github/create_issue":           EffectsDestructive, // readOnlyHint false and no destructiveHint: MCP's default
		"preflight/check_request":       EffectsReadOnly,
		"brave-search/brave_web_search": EffectsSideEffecting, // no annotations
	}
	for name, want := range effects {
		provider, operation, _ := strings.Cut(name, "/")
		if got, _ := c.EffectsOf(provider, operation); got != want {
			t.Errorf("EffectsOf(%s) = %v, want %v", name, got, want)
		}
	}
}
