package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/golden"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocol versions the tests connect with: the classic initialize
// handshake that deployed clients use, and the SDK client's default, which
// is the 2026 draft (server/discover, no initialize).
var mcpProtocolVersions = []struct {
	name    string
	version string
}{
	{"initialize 2025-11-25", "2025-11-25"},
	{"client default", ""},
}

// mcpTestServer serves the whole service, as the binary does, on loopback.
func mcpTestServer(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(New(cfg))
	t.Cleanup(ts.Close)
	return ts
}

// mcpConnect connects the official Go SDK client to ts over Streamable HTTP.
func mcpConnect(t *testing.T, ts *httptest.Server, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "preflight-test", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("Connect(%q): %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestMCPHandshakeAndToolsList(t *testing.T) {
	ts := mcpTestServer(t, Config{})
	for _, pv := range mcpProtocolVersions {
		t.Run(pv.name, func(t *testing.T) {
			cs := mcpConnect(t, ts, pv.version)
			init := cs.InitializeResult()
			if init == nil || init.ServerInfo == nil {
				t.Fatal("no initialize result")
			}
			if pv.version != "" && init.ProtocolVersion != pv.version {
				t.Errorf("negotiated protocol %q, want %q", init.ProtocolVersion, pv.version)
			}
			if got, want := init.ServerInfo.Name, "preflight"; got != want {
				t.Errorf("server name %q, want %q", got, want)
			}
			// As JSON: the SDK's Logging field is deprecated, and the wire is
			// what a client reads.
			if caps, _ := json.Marshal(init.Capabilities); init.Capabilities == nil || init.Capabilities.Tools == nil || strings.Contains(string(caps), `"logging"`) {
				t.Errorf("capabilities %s: want tools only", caps)
			}
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			want := map[string][2][]byte{
				mcpToolCheckRequest: {mcpCheckInputSchema, mcpCheckOutputSchema},
				mcpToolToolCall:     {mcpToolCallInputSchema, mcpToolCallOutputSchema},
			}
			if len(res.Tools) != len(want) {
				t.Fatalf("got %d tools, want %d", len(res.Tools), len(want))
			}
			for _, tool := range res.Tools {
				schemas, ok := want[tool.Name]
				if !ok {
					t.Errorf("unexpected tool %q", tool.Name)
					continue
				}
				if tool.Title == "" || len(tool.Description) < 200 {
					t.Errorf("%s: title %q, description of %d chars: want both, the description in full", tool.Name, tool.Title, len(tool.Description))
				}
				if diff := cmp.Diff(mcpDecode(t, schemas[0]), mcpRemarshal(t, tool.InputSchema)); diff != "" {
					t.Errorf("%s input schema (-want +got):\n%s", tool.Name, diff)
				}
				if diff := cmp.Diff(mcpDecode(t, schemas[1]), mcpRemarshal(t, tool.OutputSchema)); diff != "" {
					t.Errorf("%s output schema (-want +got):\n%s", tool.Name, diff)
				}
				if a := tool.Annotations; a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
					t.Errorf("%s annotations %+v: want read-only, closed world", tool.Name, a)
				}
			}
		})
	}
}

// TestMCPToolsListGolden pins the whole tools/list answer on the wire, as a
// client with the classic handshake receives it.
func TestMCPToolsListGolden(t *testing.T) {
	ts := mcpTestServer(t, Config{})
	status, _, body := mcpPost(t, ts, nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if status != http.StatusOK {
		t.Fatalf("status %d, body %s", status, body)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		t.Fatalf("tools/list answer is not JSON: %v\n%s", err, body)
	}
	pretty.WriteByte('\n')
	mcpGolden(t, "mcp_tools_list.golden", pretty.Bytes())
}

// The arguments of the tool-call cases: each is sent, byte for byte, both
// as MCP arguments and as the body of the HTTP route.
const (
	mcpCheckValid = `{"request":{"method":"POST","url":"https://api.example.com/v1/orders","body":{"sku":"A1","qty":2}},` +
		`"schema":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}}`
	mcpCheckInvalidBody = `{"request":{"method":"post","url":"https://api.example.com/v1/orders","headers":{"Authorization":"Bearer x"},"body":{"qty":0}},` +
		`"schema":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}},` +
		`"economics":{"downstreamCostUsd":0.05,"billsOnInvalidRequest":true,"retryCostUsd":0.01}}`
	mcpToolCallAllow = `{"runId":"r1","stepId":"s1","tool":{"provider":"search","operation":"web_search",` +
		`"request":{"query":"model context protocol","max_results":5},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`
	mcpToolCallBlock = `{"runId":"r1","stepId":"s2","tool":{"provider":"browse","operation":"fetch",` +
		`"request":{"url":"ftp://example.com/x","extra":1},"estimatedExternalCostUsd":0.002},"budget":{"remainingUsd":1},"note":"ignored"}`
	mcpToolCallDefer = `{"runId":"r1","stepId":"s3","tool":{"provider":"search","operation":"search:web_search",` +
		`"request":{"query":"x"},"estimatedExternalCostUsd":0.1,"estimatedModelCostUsd":0.2},"budget":{"remainingUsd":0.3,"reservedUsd":0.05}}`
)

func TestMCPToolCallsMatchHTTPRoutes(t *testing.T) {
	const checkPath, toolCallPath = "/check-request", "/v0.2/preflight/tool-call"
	tests := []struct {
		name      string
		tool      string
		path      string
		args      string
		wantError bool   // isError, and a 4xx from the route
		wantCode  string // error.code when wantError
	}{
		{"check valid body", mcpToolCheckRequest, checkPath, mcpCheckValid, false, ""},
		{"check invalid body is a result, not an error", mcpToolCheckRequest, checkPath, mcpCheckInvalidBody, false, ""},
		{"check unknown top-level field", mcpToolCheckRequest, checkPath, `{"request":{"method":"GET","url":"https://a.example"},"schema":{},"x":1}`, true, "invalid_request"},
		{"check unsupported schema keyword", mcpToolCheckRequest, checkPath, `{"request":{"method":"GET","url":"https://a.example"},"schema":{"format":"email"}}`, true, "unsupported_schema_keyword"},
		{"check null arguments", mcpToolCheckRequest, checkPath, `null`, true, "invalid_request"},
		{"check array arguments", mcpToolCheckRequest, checkPath, `[1,2]`, true, "invalid_request"},
		{"check string arguments", mcpToolCheckRequest, checkPath, `"request"`, true, "invalid_request"},
		{"check empty object", mcpToolCheckRequest, checkPath, `{}`, true, "invalid_request"},
		{"tool call allow", mcpToolToolCall, toolCallPath, mcpToolCallAllow, false, ""},
		{"tool call block on a bad payload", mcpToolToolCall, toolCallPath, mcpToolCallBlock, false, ""},
		{"tool call defer on exact decimal budget", mcpToolToolCall, toolCallPath, mcpToolCallDefer, false, ""},
		{"tool call unsupported operation", mcpToolToolCall, toolCallPath, strings.Replace(mcpToolCallAllow, `"search","operation":"web_search"`, `"maps","operation":"geocode"`, 1), false, ""},
		{"tool call missing runId", mcpToolToolCall, toolCallPath, `{"stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`, true, "invalid_request"},
		{"tool call null arguments", mcpToolToolCall, toolCallPath, `null`, true, "invalid_request"},
		{"tool call array arguments", mcpToolToolCall, toolCallPath, `[]`, true, "invalid_request"},
	}
	ts := mcpTestServer(t, Config{})
	for _, pv := range mcpProtocolVersions {
		cs := mcpConnect(t, ts, pv.version)
		for _, tt := range tests {
			t.Run(pv.name+"/"+tt.name, func(t *testing.T) {
				status, httpBody := mcpHTTPRoute(t, ts, tt.path, tt.args)
				if got, want := status != http.StatusOK, tt.wantError; got != want {
					t.Fatalf("route %s answered %d %s; want error %v", tt.path, status, httpBody, want)
				}
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: json.RawMessage(tt.args)})
				if err != nil {
					t.Fatalf("CallTool: %v", err)
				}
				if res.IsError != tt.wantError {
					t.Errorf("isError %v, want %v", res.IsError, tt.wantError)
				}
				if len(res.Content) != 1 {
					t.Fatalf("got %d content blocks, want 1", len(res.Content))
				}
				text, ok := res.Content[0].(*mcp.TextContent)
				if !ok {
					t.Fatalf("content is %T, want *mcp.TextContent", res.Content[0])
				}
				if diff := cmp.Diff(string(httpBody), text.Text); diff != "" {
					t.Errorf("text block differs from the HTTP route's body (-route +mcp):\n%s", diff)
				}
				if diff := cmp.Diff(mcpDecode(t, httpBody), mcpRemarshal(t, res.StructuredContent)); diff != "" {
					t.Errorf("structuredContent differs from the HTTP route's body (-route +mcp):\n%s", diff)
				}
				if tt.wantError {
					if got := mcpErrorCode(t, httpBody); got != tt.wantCode {
						t.Errorf("error.code %q, want %q", got, tt.wantCode)
					}
				}
			})
		}
	}

	// On the wire, structuredContent and the text block are the route's
	// bytes exactly, not just the same JSON value.
	for _, tt := range tests {
		t.Run("wire/"+tt.name, func(t *testing.T) {
			_, httpBody := mcpHTTPRoute(t, ts, tt.path, tt.args)
			msg := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tt.tool + `","arguments":` + tt.args + `}}`
			status, _, body := mcpPost(t, ts, nil, msg)
			if status != http.StatusOK {
				t.Fatalf("status %d, body %s", status, body)
			}
			res := mcpWireResult(t, body)
			if !bytes.Equal(res.StructuredContent, httpBody) {
				t.Errorf("structuredContent bytes\n%s\nwant the route's body\n%s", res.StructuredContent, httpBody)
			}
			if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != string(httpBody) {
				t.Errorf("content %+v, want one text block holding the route's body", res.Content)
			}
		})
	}
}

// TestMCPAbsentArguments covers a tools/call without arguments, which the
// SDK client never sends (it substitutes {}), so it goes over plain HTTP.
func TestMCPAbsentArguments(t *testing.T) {
	ts := mcpTestServer(t, Config{})
	for _, tool := range []string{mcpToolCheckRequest, mcpToolToolCall} {
		t.Run(tool, func(t *testing.T) {
			status, _, body := mcpPost(t, ts, nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`"}}`)
			if status != http.StatusOK {
				t.Fatalf("status %d, body %s", status, body)
			}
			res := mcpWireResult(t, body)
			want := `{"error":{"code":"invalid_request","message":"tools/call has no arguments: params.arguments must be the request object",` +
				`"details":[{"path":"","code":"required","message":"expected a JSON object, found nothing"}]}}`
			if !res.IsError {
				t.Error("isError false, want true")
			}
			if diff := cmp.Diff(want, string(res.StructuredContent)); diff != "" {
				t.Errorf("structuredContent (-want +got):\n%s", diff)
			}
			if len(res.Content) != 1 || res.Content[0].Text != want {
				t.Errorf("content %+v, want one text block holding the envelope", res.Content)
			}
		})
	}
}

func TestMCPUnknownTool(t *testing.T) {
	ts := mcpTestServer(t, Config{})
	cs := mcpConnect(t, ts, "2025-11-25")
	const tools = `"check_request" and "preflight_tool_call" (see tools/list)`
	for _, tc := range []struct{ name, want string }{
		{"execute", `unknown tool "execute": the tools are ` + tools},
		{"check-request", `unknown tool "check-request": did you mean "check_request"? The tools are ` + tools},
		{"PreflightToolCall", `unknown tool "PreflightToolCall": did you mean "preflight_tool_call"? The tools are ` + tools},
		{"", `unknown tool "": the tools are ` + tools},
	} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.name, Arguments: map[string]any{}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			t.Errorf("CallTool(%q) error %v, want a JSON-RPC error", tc.name, err)
			continue
		}
		if rpcErr.Code != jsonrpc.CodeInvalidParams || rpcErr.Message != tc.want {
			t.Errorf("CallTool(%q) error code %d message %q,\nwant code %d message %q", tc.name, rpcErr.Code, rpcErr.Message, jsonrpc.CodeInvalidParams, tc.want)
		}
	}
	status, _, body := mcpPost(t, ts, nil, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{}}}`)
	var msg struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || status != http.StatusOK || msg.Error.Code != -32602 {
		t.Errorf("got %d %s, want 200 with JSON-RPC error -32602", status, body)
	}
}

// TestMCPJSONRPCRefusals: a request of a method the server does not have
// gets the JSON-RPC error Method not found (-32601) under its id; params of
// the wrong JSON type get Invalid params (-32602) naming the member and
// the type expected; a request
// whose id the answer could not carry unchanged (a number that is not an
// integer within ±(2^53-1) written plainly, which the SDK would round, or
// an id of another type) gets Invalid Request (-32600) with HTTP 400,
// under the id as sent when it is a number, else null.
func TestMCPJSONRPCRefusals(t *testing.T) {
	ts := mcpTestServer(t, Config{})
	for _, tt := range []struct {
		name, body string
		status     int
		id         string
		code       int
	}{
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"tools/execute","params":{}}`, 200, `1`, -32601},
		{"unknown method, string id", `{"jsonrpc":"2.0","id":"q","method":"nope/nope"}`, 200, `"q"`, -32601},
		{"id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, 400, `9007199254740993`, -32600},
		{"id past int64", `{"jsonrpc":"2.0","id":99999999999999999999999,"method":"ping"}`, 400, `99999999999999999999999`, -32600},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, 400, `1.5`, -32600},
		{"id with an exponent", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, 400, `1e400`, -32600},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, 400, `null`, -32600},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, 400, `null`, -32600},
		{"largest safe id", `{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}`, 200, `-9007199254740991`, 0},
		{"initialize, protocolVersion a number", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, 200, `5`, -32602},
		{"initialize, clientInfo.version a number", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":1}}}`, 200, `5`, -32602},
		{"tools/call, name a number", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":5,"arguments":{}}}`, 200, `6`, -32602},
		{"params an array", `{"jsonrpc":"2.0","id":7,"method":"ping","params":[]}`, 200, `7`, -32602},
		// Members are read by their exact names, and null is absent, as
		// the SDK reads them.
		{"a case twin of params", `{"jsonrpc":"2.0","id":8,"method":"ping","params":{},"PARAMS":7}`, 200, `8`, 0},
		{"initialize, capabilities null", `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":null,"clientInfo":{"name":"t","version":"1"}}}`, 200, `9`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := mcpPost(t, ts, nil, tt.body)
			var msg struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &msg); err != nil || status != tt.status || string(msg.ID) != tt.id ||
				(tt.code == 0) != (msg.Error == nil) || msg.Error != nil && msg.Error.Code != tt.code {
				t.Errorf("got %d %s; want %d, id %s, error code %d", status, body, tt.status, tt.id, tt.code)
			}
			// An invalid-params message names the member by its pointer
			// and the type expected, never a Go type.
			if tt.code == -32602 && (!bytes.Contains(body, []byte(`invalid params: /params`)) || !bytes.Contains(body, []byte(" must be ")) || bytes.Contains(body, []byte("Go "))) {
				t.Errorf("message %s does not name the member and the type expected", body)
			}
		})
	}
}

// TestMCPTransportAnswers covers every answer that is not a JSON-RPC
// response: each is the service's error envelope.
func TestMCPTransportAnswers(t *testing.T) {
	tools := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_request","arguments":{"pad":"` +
		strings.Repeat("x", MaxBodyBytes) + `"}}}`
	tests := []struct {
		name       string
		cfg        Config
		method     string
		header     http.Header
		host       string
		body       io.Reader // nil: no body
		wantStatus int
		wantCode   string // error.code; empty means a JSON-RPC answer (status 200)
		wantAllow  string
		wantRPC    int // the code of a JSON-RPC error answering id 1, when not 0
	}{
		{name: "GET opens no event stream", method: "GET", wantStatus: 405, wantCode: "method_not_allowed", wantAllow: "POST"},
		{name: "DELETE ends no session", method: "DELETE", wantStatus: 405, wantCode: "method_not_allowed", wantAllow: "POST"},
		{name: "PUT", method: "PUT", body: strings.NewReader(tools), wantStatus: 405, wantCode: "method_not_allowed", wantAllow: "POST"},
		{name: "bare check body is not a call", method: "POST", body: strings.NewReader(mcpCheckValid), wantStatus: 400, wantCode: "invalid_request"},
		{name: "bare tool-call body is not a call", method: "POST", body: strings.NewReader(mcpToolCallAllow), wantStatus: 400, wantCode: "invalid_request"},
		{name: "empty body", method: "POST", body: strings.NewReader(""), wantStatus: 400, wantCode: "invalid_json"},
		{name: "not JSON", method: "POST", body: strings.NewReader(`{"jsonrpc":`), wantStatus: 400, wantCode: "invalid_json"},
		{name: "duplicate id", method: "POST", body: strings.NewReader(`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}`), wantStatus: 400, wantCode: "invalid_json"},
		{name: "duplicate arguments", method: "POST", body: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_request","arguments":{"request":1},"arguments":` + mcpCheckValid + `}}`), wantStatus: 400, wantCode: "invalid_json"},
		{name: "duplicate id after bad arguments", method: "POST", body: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_request","arguments":{"a":1,"a":2}},"id":2}`), wantStatus: 400, wantCode: "invalid_json"},
		{name: "duplicate params member after bad arguments", method: "POST", body: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":1,"a":2},"name":"check_request","name":"decide"}}`), wantStatus: 400, wantCode: "invalid_json"},
		{name: "invalid UTF-8 outside the arguments", method: "POST", body: strings.NewReader("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"tools/list\"}"), wantStatus: 400, wantCode: "invalid_json"},
		{name: "lone surrogate escape", method: "POST", body: strings.NewReader(`{"jsonrpc":"2.0","id":"\ud800","method":"tools/list"}`), wantStatus: 400, wantCode: "invalid_json"},
		{name: "wrong jsonrpc version", method: "POST", body: strings.NewReader(`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`), wantStatus: 400, wantCode: "invalid_request"},
		{name: "over 65536 bytes with Content-Length", method: "POST", body: strings.NewReader(big), wantStatus: 413, wantCode: "payload_too_large"},
		{name: "over 65536 bytes chunked", method: "POST", body: io.MultiReader(strings.NewReader(big)), wantStatus: 413, wantCode: "payload_too_large"},
		{name: "gzip body", method: "POST", header: http.Header{"Content-Encoding": {"gzip"}}, body: strings.NewReader("\x1f\x8b\x08\x00"), wantStatus: 400, wantCode: "unsupported_content_encoding"},
		{name: "identity body", method: "POST", header: http.Header{"Content-Encoding": {"identity"}}, body: strings.NewReader(tools), wantStatus: 200},
		{name: "Content-Type not JSON", method: "POST", header: http.Header{"Content-Type": {"text/plain"}}, body: strings.NewReader(tools), wantStatus: 400, wantCode: "unsupported_media_type"},
		{name: "protocol version not a date", method: "POST", header: http.Header{"Mcp-Protocol-Version": {"latest"}}, body: strings.NewReader(tools), wantStatus: 400, wantRPC: mcp.CodeUnsupportedProtocolVersion},
		{name: "protocol version sorting after the newest", method: "POST", header: http.Header{"Mcp-Protocol-Version": {"2\xef15-%%%%%03-26"}}, body: strings.NewReader(tools), wantStatus: 400, wantRPC: mcp.CodeUnsupportedProtocolVersion},
		{name: "protocol version month 13", method: "POST", header: http.Header{"Mcp-Protocol-Version": {"2027-13-01"}}, body: strings.NewReader(tools), wantStatus: 400, wantRPC: mcp.CodeUnsupportedProtocolVersion},
		{name: "protocol version unknown old date", method: "POST", header: http.Header{"Mcp-Protocol-Version": {"2024-01-01"}}, body: strings.NewReader(tools), wantStatus: 400, wantRPC: mcp.CodeUnsupportedProtocolVersion},
		{name: "protocol version 2025-06-18", method: "POST", header: http.Header{"Mcp-Protocol-Version": {"2025-06-18"}}, body: strings.NewReader(tools), wantStatus: 200},
		{name: "Accept without event-stream", method: "POST", header: http.Header{"Accept": {"application/json"}}, body: strings.NewReader(tools), wantStatus: 400, wantCode: "invalid_request"},
		{name: "foreign Host on loopback (DNS rebinding)", method: "POST", host: "api.example.com", body: strings.NewReader(tools), wantStatus: 403, wantCode: "forbidden"},
		{name: "foreign Host trusted behind a proxy", cfg: Config{MCPTrustProxyHost: true}, method: "POST", host: "api.example.com", body: strings.NewReader(tools), wantStatus: 200},
		{name: "notification only", method: "POST", body: strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), wantStatus: 202},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := mcpTestServer(t, tt.cfg)
			req, err := http.NewRequest(tt.method, ts.URL+"/mcp", tt.body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.header {
				req.Header[k] = v
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.wantStatus, body)
			}
			if got := resp.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow %q, want %q", got, tt.wantAllow)
			}
			if tt.wantRPC != 0 {
				// The 2026-07-28 revision's error: the request's id, and
				// data naming what is supported and what was asked for.
				var answer struct {
					ID    json.RawMessage
					Error struct {
						Code int
						Data mcp.UnsupportedProtocolVersionData
					}
				}
				if err := json.Unmarshal(body, &answer); err != nil || string(answer.ID) != "1" || answer.Error.Code != tt.wantRPC ||
					!slices.Equal(answer.Error.Data.Supported, mcp.SupportedProtocolVersions()) || answer.Error.Data.Requested == "" {
					t.Errorf("want a JSON-RPC error %d for id 1 with the supported versions and the requested one; got %s", tt.wantRPC, body)
				}
				return
			}
			if tt.wantCode == "" {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if got := mcpErrorCode(t, body); got != tt.wantCode {
				t.Errorf("error.code %q, want %q; body %s", got, tt.wantCode, body)
			}
		})
	}
}

// mcpHTTPRoute POSTs body to an HTTP route of ts and returns status and body.
func mcpHTTPRoute(t *testing.T, ts *httptest.Server, path, body string) (int, []byte) {
	t.Helper()
	resp, err := ts.Client().Post(ts.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// mcpPost POSTs one JSON-RPC message to /mcp as an MCP client would, without
// a session (the endpoint is stateless).
func mcpPost(t *testing.T, ts *httptest.Server, header http.Header, msg string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// mcpWireToolResult is a tools/call result as it appears on the wire, with
// structuredContent kept as raw bytes.
type mcpWireToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// mcpWireResult extracts the tools/call result from a JSON-RPC response.
func mcpWireResult(t *testing.T, body []byte) mcpWireToolResult {
	t.Helper()
	var msg struct {
		Result *mcpWireToolResult `json:"result"`
		Error  json.RawMessage    `json:"error"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.Result == nil {
		t.Fatalf("not a tools/call result (%v): %s", err, body)
	}
	return *msg.Result
}

// mcpErrorCode returns error.code of an error envelope.
func mcpErrorCode(t *testing.T, body []byte) string {
	t.Helper()
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("not an error envelope (%v): %s", err, body)
	}
	if env.Error.Message == "" {
		t.Errorf("error envelope without a message: %s", body)
	}
	return env.Error.Code
}

// mcpDecode parses JSON into plain Go values (float64 numbers).
func mcpDecode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON (%v): %s", err, b)
	}
	return v
}

// mcpRemarshal turns any value the SDK client produced into plain Go values.
func mcpRemarshal(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return mcpDecode(t, b)
}

// mcpGolden compares got with testdata/name, or rewrites it under -update.
func mcpGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// BenchmarkMCPToolCall measures one stateless tools/call POST over loopback
// HTTP, next to the same request on the HTTP route, so the MCP overhead
// (JSON-RPC framing, a temporary SDK session per POST) can be read off.
func BenchmarkMCPToolCall(b *testing.B) {
	ts := httptest.NewServer(New(Config{}))
	defer ts.Close()
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"preflight_tool_call","arguments":` + mcpToolCallAllow + `}}`
	post := func(b *testing.B, path, body string, mcpHeaders bool) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if mcpHeaders {
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.Run("mcp", func(b *testing.B) {
		for b.Loop() {
			post(b, "/mcp", msg, true)
		}
	})
	b.Run("http-route", func(b *testing.B) {
		for b.Loop() {
			post(b, "/v0.2/preflight/tool-call", mcpToolCallAllow, false)
		}
	})
}

// TestMCPPromptsDeclared: /mcp has no prompts, but the SDK answers
// prompts/list (with an empty list), so server/discover must declare the
// prompts capability: the 2026-07-28 revision requires it of a server that
// handles prompts/list.
func TestMCPPromptsDeclared(t *testing.T) {
	ts := mcpTestServer(t, Config{})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(method string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":{`+meta+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	status, body := post("server/discover")
	var discover struct {
		Result struct{ Capabilities map[string]json.RawMessage }
	}
	if err := json.Unmarshal(body, &discover); status != 200 || err != nil || discover.Result.Capabilities["tools"] == nil {
		t.Fatalf("server/discover: %d %s", status, body)
	}
	if discover.Result.Capabilities["prompts"] == nil {
		t.Errorf("server/discover does not declare prompts: %s", body)
	}
	status, body = post("prompts/list")
	var list struct {
		Result struct{ Prompts []json.RawMessage }
		Error  json.RawMessage
	}
	if err := json.Unmarshal(body, &list); status != 200 || err != nil || list.Error != nil || len(list.Result.Prompts) != 0 {
		t.Errorf("prompts/list: %d %s; want an empty list", status, body)
	}
}
