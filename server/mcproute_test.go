package server

import "testing"

// TestMCPRouteDocumented sends a few exchanges to /mcp through the
// validating client so openapi.json keeps describing the transport's
// answers (the MCP behaviour itself is tested in mcp_test.go).
func TestMCPRouteDocumented(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	accept := "Accept: application/json, text/event-stream"
	tests := []struct {
		name, method, body string
		status             int
	}{
		{"initialize", "POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`, 200},
		{"tools/list", "POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, 200},
		{"bare tool body", "POST", toolAllow, 400},
		{"stream not offered", "GET", "", 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			x := c.do(tc.method, "/mcp", body, accept, "Content-Type: application/json")
			if x.Status != tc.status {
				t.Errorf("status %d, want %d: %s", x.Status, tc.status, x.Body)
			}
		})
	}
}
