package mcpproxy

import (
	"context"
	"net/http"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPDialer connects to a Streamable HTTP MCP server at url. client nil
// means http.DefaultClient.
func HTTPDialer(url string, client *http.Client) Dialer {
	return func(ctx context.Context) (mcp.Connection, error) {
		t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, DisableStandaloneSSE: true}
		return t.Connect(ctx)
	}
}

// CommandDialer starts name with args for every session and speaks MCP
// with it over its standard input and output. The process ends with its
// session.
func CommandDialer(name string, args ...string) Dialer {
	return func(ctx context.Context) (mcp.Connection, error) {
		cmd := exec.Command(name, args...)
		return (&mcp.CommandTransport{Command: cmd}).Connect(ctx)
	}
}
