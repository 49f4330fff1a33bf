package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBinaryOperationsFlag runs the real binary with --operations: a bad
// catalog file stops it at start with the pointer to the problem; a good
// one is decided over HTTP and MCP and listed in /openapi.json and /docs.
func TestBinaryOperationsFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)

	t.Run("bad file stops the program at start", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.json")
		os.WriteFile(bad, []byte(`{"operations": [
			{"provider": "github", "name": "create_issue", "schema": {"type": "object", "properties": {"title": {"$ref": "https://example.com/title.json"}}}},
			{"provider": "github", "name": "create_issue"}
		]}`), 0o600)
		cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--operations", bad)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("exit: %v\n%s", err, out)
		}
		for _, want := range []string{
			"/operations/0/schema/properties/title/$ref: the reference \"https://example.com/title.json\" names \"https://example.com/title.json\", a document outside this schema",
			"/operations/1/name: operation \"github/create_issue\" is already declared at /operations/0",
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("output does not say %q:\n%s", want, out)
			}
		}
		if strings.Contains(string(out), "listening") {
			t.Errorf("the program started listening:\n%s", out)
		}
	})

	t.Run("a device stops the program at start", func(t *testing.T) {
		if _, err := os.Stat("/dev/zero"); err != nil {
			t.Skip("no /dev/zero on this system")
		}
		out, err := exec.Command(bin, "--addr", "127.0.0.1:0", "--operations", "/dev/zero").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 ||
			!strings.Contains(string(out), "--operations /dev/zero is not a regular file (it is a device); want a regular file of at most 4194304 bytes (4 MiB)") {
			t.Errorf("exit %v, output:\n%s", err, out)
		}
	})

	t.Run("unknown member stops the program at start", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.json")
		os.WriteFile(bad, []byte(`{"operations": [{"provider": "a", "name": "b", "inputSchema": {}}]}`), 0o600)
		out, err := exec.Command(bin, "--addr", "127.0.0.1:0", "--operations", bad).CombinedOutput()
		if err == nil || !strings.Contains(string(out), `/operations/0/inputSchema: unknown member "inputSchema"`) {
			t.Errorf("exit %v, output:\n%s", err, out)
		}
	})

	catalog := filepath.Join("..", "..", "..", "testdata", "catalog", "operations.json")
	d := startDaemon(t, bin, "--operations", catalog)
	base := "http://" + d.addr

	decideHTTP := func(payload string) map[string]any {
		body := `{"runId":"r","stepId":"s","tool":{"provider":"marketdata","operation":"get_quote","request":` + payload +
			`,"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`
		resp, err := http.Post(base+"/v0.2/preflight/tool-call", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		return out
	}
	if got := decideHTTP(`{"symbol":"ACME"}`); got["decision"] != "allow" {
		t.Errorf("HTTP valid quote: %v", got)
	}
	got := decideHTTP(`{"symbol":"acme"}`)
	issues, _ := got["issues"].([]any)
	if got["decision"] != "block" || len(issues) != 1 || issues[0].(map[string]any)["path"] != "/tool/request/symbol" {
		t.Errorf("HTTP invalid quote: %v", got)
	}

	// MCP, with the official SDK client.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "preflight_tool_call", Arguments: json.RawMessage(
		`{"runId":"r","stepId":"s","tool":{"provider":"email","operation":"send_emial","request":{},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`)})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError || !strings.Contains(text, `"UNSUPPORTED_OPERATION"`) || !strings.Contains(text, `did you mean \"email/send_email\"?`) {
		t.Errorf("MCP typo: %s", text)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "preflight_tool_call", Arguments: json.RawMessage(
		`{"runId":"r","stepId":"s","tool":{"provider":"email","operation":"send_email","request":{"to":"x"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `"decision":"block"`) || !strings.Contains(text, `"path":"/tool/request/subject","code":"required"`) {
		t.Errorf("MCP invalid email: %s", text)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "preflight_tool_call" && !strings.Contains(tool.Description, "- marketdata/get_quote (also quote), read_only: {") {
			t.Errorf("preflight_tool_call description does not list the catalog:\n%s", tool.Description)
		}
	}

	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return string(b)
	}
	var doc struct {
		Ops []struct {
			Provider, Operation, Effects string
		} `json:"x-preflight-operations"`
	}
	if err := json.Unmarshal([]byte(get("/openapi.json")), &doc); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, op := range doc.Ops {
		listed = append(listed, op.Provider+"/"+op.Operation+" "+op.Effects)
	}
	if want := "search/web_search read_only,browse/fetch read_only,marketdata/get_quote read_only,email/send_email side_effecting,github/delete_branch destructive"; strings.Join(listed, ",") != want {
		t.Errorf("/openapi.json lists %v, want %s", listed, want)
	}
	for _, path := range []string{"/docs", "/llms.txt", "/llms-full.txt"} {
		if page := get(path); !strings.Contains(page, "Operations decided by this server") || !strings.Contains(page, "get_quote") ||
			!strings.Contains(page, "delete_branch") {
			t.Errorf("%s does not list the configured operations", path)
		}
	}
	if schema := get("/schemas/operations.json"); !strings.Contains(schema, `"preflight operation catalog"`) {
		t.Errorf("/schemas/operations.json: %.200s", schema)
	}
}
