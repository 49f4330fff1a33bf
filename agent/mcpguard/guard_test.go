package mcpguard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var protocolVersions = []string{"2025-11-25", ""} // classic handshake, and the SDK's preferred one

// connect runs srv on an in-memory transport and returns a connected client
// session.
func connect(t *testing.T, srv *mcp.Server, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "script", Version: "1.0.0"}, nil)
}

func TestClientMiddlewareScript(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run("version="+v, func(t *testing.T) {
			srv, counts := mcptest.NewServer("")
			client := newClient()
			client.AddSendingMiddleware(mcpguard.Client(mcptest.ScriptGuard()))
			tally := mcptest.RunScript(t, connect(t, srv, client, v), counts.Snapshot)
			t.Log(tally)
		})
	}
}

func TestServerMiddlewareScriptInMemory(t *testing.T) {
	for _, v := range protocolVersions {
		t.Run("version="+v, func(t *testing.T) {
			srv, counts := mcptest.NewServer("")
			srv.AddReceivingMiddleware(mcpguard.Server(mcptest.ScriptGuard()))
			tally := mcptest.RunScript(t, connect(t, srv, newClient(), v), counts.Snapshot)
			t.Log(tally)
		})
	}
}

func TestServerMiddlewareScriptStreamableHTTP(t *testing.T) {
	srv, counts := mcptest.NewServer("")
	srv.AddReceivingMiddleware(mcpguard.Server(mcptest.ScriptGuard()))
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	cs, err := newClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	t.Log(mcptest.RunScript(t, cs, counts.Snapshot))
}
