package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzMCP posts arbitrary bodies to /mcp as an MCP client would. Every
// answer must be 200, 202 (empty), 400 or 413, or 404 carrying a JSON-RPC
// "method not found" error (how protocol 2026-07-28 answers an unknown
// method, and the SDK takes any version that sorts after it for that
// one); JSON, within MaxMCPResponseBytes, and never more than one JSON-RPC
// response: a batch is never answered item by item. Nothing may panic or
// answer 500.
func FuzzMCP(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"check_request","arguments":` + mcpCheckValid + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"preflight_tool_call","arguments":` + mcpToolCallAllow + `}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`[]`, `{}`, `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, "", "[", mcpCheckValid,
	} {
		f.Add(s, "")
		f.Add(s, "2025-03-26")
	}
	h := New(Config{})
	f.Fuzz(func(t *testing.T, body, version string) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(body)))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header["Mcp-Protocol-Version"] = []string{version}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		out := rec.Body.Bytes()
		if version != "" && !slices.Contains(mcp.SupportedProtocolVersions(), version) && rec.Code != 400 && rec.Code != 413 {
			t.Fatalf("MCP-Protocol-Version %q is not supported, answered %d: %s", version, rec.Code, out)
		}
		switch rec.Code {
		case 202:
			if len(out) != 0 {
				t.Fatalf("202 with a body: %q", out)
			}
			return
		case 200, 400, 413:
		case 404:
			var answer struct {
				Error struct{ Code int } `json:"error"`
			}
			if json.Unmarshal(out, &answer) != nil || answer.Error.Code != -32601 {
				t.Fatalf("status 404 without a JSON-RPC method-not-found error: %s", out)
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, out)
		}
		if len(out) > MaxMCPResponseBytes {
			t.Fatalf("a %d-byte answer", len(out))
		}
		if !json.Valid(out) {
			t.Fatalf("answer is not JSON: %q", out)
		}
		if t := bytes.TrimSpace(out); len(t) > 0 && t[0] == '[' {
			panic("a batch answer: " + string(out))
		}
	})
}
