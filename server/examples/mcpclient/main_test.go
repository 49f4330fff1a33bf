package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/server"
)

// TestRun runs the example against the real handler on a loopback test
// server, with the classic handshake and with the SDK's default protocol.
func TestRun(t *testing.T) {
	ts := httptest.NewServer(server.New(server.Config{}))
	defer ts.Close()
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			var out strings.Builder
			if err := run(context.Background(), []string{"-url", ts.URL + "/mcp", "-protocol", protocol}, &out); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			t.Log(out.String())
			for _, want := range []string{
				"connected to preflight",
				"tool check_request:",
				"tool preflight_tool_call:",
				"check_request (isError false)",
				`"valid": false`,
				`"decision": "abort"`,
				"preflight_tool_call (isError false)",
				`"decision": "allow"`,
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestRunUnreachable checks that a server that is not there is an error,
// not a hang or a panic.
func TestRunUnreachable(t *testing.T) {
	ts := httptest.NewServer(nil)
	url := ts.URL + "/mcp"
	ts.Close()
	var out strings.Builder
	if err := run(context.Background(), []string{"-url", url}, &out); err == nil {
		t.Errorf("run against a closed server: no error; output:\n%s", out.String())
	}
}
