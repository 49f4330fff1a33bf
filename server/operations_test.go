package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
)

func testCatalog(t *testing.T) *preflight.Catalog {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "catalog", "operations.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := preflight.DecodeCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOperationsSchemaChecksFiles: the served schema is the repository's
// file, and it accepts the catalog files this repository ships and refuses
// broken ones. It is written in preflight's own subset, so preflight checks
// files against it.
func TestOperationsSchemaChecksFiles(t *testing.T) {
	onDisk, err := os.ReadFile(filepath.Join("schemas", "operations.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	New(Config{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, pathOperationsSchema, nil))
	if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), onDisk) {
		t.Fatalf("GET %s: %d, body equal to the file: %v", pathOperationsSchema, rec.Code, bytes.Equal(rec.Body.Bytes(), onDisk))
	}
	meta, err := preflight.NewCatalog(preflight.Operation{Provider: "preflight", Name: "catalog_file", Schema: onDisk})
	if err != nil {
		t.Fatalf("the file schema is outside the subset: %v", err)
	}
	check := func(file []byte) *preflight.ToolCallDecision {
		d, err := meta.Decide(&preflight.ToolCallRequest{RunID: "r", StepID: "s",
			Tool:   preflight.ToolCall{Provider: "preflight", Operation: "catalog_file", Request: file, EstimatedExternalCostUSD: "0"},
			Budget: preflight.Budget{RemainingUSD: "1"}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, name := range []string{
		filepath.Join("..", "testdata", "catalog", "operations.json"),
		filepath.Join("..", "examples", "replay", "testdata", "operations.json"),
	} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if d := check(data); d.Verdict != preflight.VerdictAllow {
			t.Errorf("%s does not satisfy the schema: %v", name, d.Issues)
		}
		if _, err := preflight.DecodeCatalog(data); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The proxy's file is the same format: prices, TTLs and retry caps,
	// and a schema as an MCP server lists it (draft-07).
	proxyFile := []byte(`{"builtins":false,"operations":[{"provider":"mcp","name":"market_quote","priceUsd":0.02,"ttlSeconds":60,"retryCap":2,` +
		`"schema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"symbol":{"type":"string"}}}}]}`)
	if d := check(proxyFile); d.Verdict != preflight.VerdictAllow {
		t.Errorf("a proxy file does not satisfy the schema: %v", d.Issues)
	}
	if _, specs, err := tools.DecodeSpecFile(proxyFile); err != nil || len(specs) != 1 || specs[0].PriceUSD != "0.02" {
		t.Errorf("a proxy file: %v %+v", err, specs)
	}
	bad := map[string]string{
		`{"operations":[{"provider":"a","name":"b","priceUsd":-1}]}`:         "/operations/0/priceUsd",
		`{"operations":[{"provider":"a","name":"b","effects":"readonly"}]}`:  "/operations/0/effects",
		`{"operations":[{"provider":"a","name":"b","inputSchema":{}}]}`:      "/operations/0/inputSchema",
		`{"operations":[{"provider":"","name":"b"}]}`:                        "/operations/0/provider",
		`{"operations":[{"provider":"a","name":"b","annotations":{"x":1}}]}`: "/operations/0/annotations/x",
		`{"ops":[]}`: "/operations",
	}
	for file, path := range bad {
		d := check([]byte(file))
		if d.Verdict != preflight.VerdictBlock || !strings.Contains(mustJSON(t, d.Issues), `"/tool/request`+path) {
			t.Errorf("%s: %s %v, want a block pointing at %s", file, d.Verdict, d.Issues, path)
		}
		if _, err := preflight.DecodeCatalog([]byte(file)); err == nil {
			t.Errorf("%s: DecodeCatalog accepts what the schema refuses", file)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConfiguredCatalogDocuments: without a catalog the documents are the
// embedded ones byte for byte; with one, they list its operations.
func TestConfiguredCatalogDocuments(t *testing.T) {
	if !bytes.Equal(openAPIFor(nil), openAPIDocument) || operationsDescription(nil) != "" {
		t.Error("without a catalog the documents changed")
	}
	c := testCatalog(t)
	h := New(Config{Catalog: c, BaseURL: "https://api.example.com"})
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 200 {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
		return rec.Body.String()
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(get("/openapi.json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" || doc["servers"].([]any)[0].(map[string]any)["url"] != "https://api.example.com" {
		t.Errorf("OpenAPI document damaged: openapi %v servers %v", doc["openapi"], doc["servers"])
	}
	ops := doc["x-preflight-operations"].([]any)
	quote := ops[2].(map[string]any)
	if len(ops) != 5 || quote["operation"] != "get_quote" || quote["payloadSchema"].(map[string]any)["required"] == nil {
		t.Errorf("x-preflight-operations: %v", ops)
	}
	provider := doc["components"].(map[string]any)["schemas"].(map[string]any)["ToolCall"].(map[string]any)["properties"].(map[string]any)["provider"].(map[string]any)
	if want := "Configured on this server: `search`, `browse`, `marketdata`, `email`, `github`. Others are answered with advise/UNSUPPORTED_OPERATION."; provider["description"] != want {
		t.Errorf("provider description %q", provider["description"])
	}
	md := get("/docs/index.md")
	for _, want := range []string{
		"## Operations decided by this server",
		"| `marketdata` | `get_quote` | `quote` | read_only | `{\"$schema\":",
		"| `email` | `send_email` | — | side_effecting |",
		"| `github` | `delete_branch` | — | destructive |",
		"https://api.example.com/schemas/operations.json",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("/docs/index.md lacks %q", want)
		}
	}
	if html := get("/docs"); !strings.Contains(html, "<h2 id=\"operations-decided-by-this-server\">") {
		t.Error("/docs does not render the operations section")
	}
}

// TestMCPToolsListWithCatalog: with a catalog, tools/list (through the
// official SDK client) leads the tool's title and description with its
// operations, and the input schema no
// longer imposes the search/browse payload members on other operations.
func TestMCPToolsListWithCatalog(t *testing.T) {
	ts := mcpTestServer(t, Config{Catalog: testCatalog(t)})
	cs := mcpConnect(t, ts, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, tool := range res.Tools {
		if tool.Name != mcpToolToolCall {
			continue
		}
		found = true
		// The configured operations lead: the title and the first
		// sentence no longer speak of search or fetch only.
		if tool.Title != "Decide whether a tool call is worth making: web_search, fetch, get_quote, …" {
			t.Errorf("title %q", tool.Title)
		}
		if !strings.HasPrefix(tool.Description, "Decide whether a proposed call of one of the operations below is worth making") ||
			!strings.HasSuffix(tool.Description, mcpToolCallBody) ||
			!strings.Contains(tool.Description, "\n- email/send_email, side_effecting: {\"type\":\"object\"") ||
			!strings.Contains(tool.Description, "\n- browse/fetch (also browse:fetch), read_only: ") {
			t.Errorf("description:\n%s", tool.Description)
		}
		schema := mustJSON(t, tool.InputSchema)
		var doc struct {
			Properties struct {
				Tool struct {
					Properties map[string]map[string]any `json:"properties"`
				} `json:"tool"`
			} `json:"properties"`
		}
		if err := json.Unmarshal([]byte(schema), &doc); err != nil {
			t.Fatal(err)
		}
		props := doc.Properties.Tool.Properties
		if _, has := props["request"]["properties"]; has || props["request"]["type"] != "object" {
			t.Errorf("tool.request schema %v; want any object", props["request"])
		}
		if !strings.Contains(props["provider"]["description"].(string), "`marketdata`") {
			t.Errorf("tool.provider description %v", props["provider"]["description"])
		}
	}
	if !found {
		t.Fatal("preflight_tool_call is not listed")
	}
}
