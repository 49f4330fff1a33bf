package mcpproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpUpstream serves the test tools over Streamable HTTP.
func httpUpstream(t testing.TB) (string, *mcptest.Counters) {
	t.Helper()
	srv, counts := mcptest.NewServer("")
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL, counts
}

// startProxy serves a proxy over dial and returns its /mcp URL.
func startProxy(t testing.TB, dial Dialer, g mcpguard.Options) (string, *Proxy) {
	t.Helper()
	p := New(Options{Dial: dial, Guard: g})
	mux := http.NewServeMux()
	mux.Handle("/mcp", p)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() { p.Close(); ts.Close() })
	return ts.URL + "/mcp", p
}

func connect(t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "script", Version: "1.0.0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestProxyHTTPUpstreamScript(t *testing.T) {
	for _, v := range []string{"2025-11-25", ""} {
		t.Run("version="+v, func(t *testing.T) {
			up, counts := httpUpstream(t)
			url, p := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
			cs := connect(t, url, v)
			t.Log(mcptest.RunScript(t, cs, counts.Snapshot))
			// startProxy sets no UpstreamURL: a stateless client is served
			// by the bridge (bridge.go) over one upstream connection, without
			// a session.
			want := 1
			if v == "" {
				want = 0
			}
			if n := p.Sessions(); n != want {
				t.Fatalf("%d proxy sessions, want %d", n, want)
			}
		})
	}
}

// toolServer builds the stdio tool server once per test binary run.
func toolServer(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH (%v); it builds the stdio tool server", err)
	}
	bin := filepath.Join(t.TempDir(), "toolserver")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/agentpreflight/preflight/agent/mcpguard/mcptest/toolserver").CombinedOutput()
	if err != nil {
		t.Fatalf("go build toolserver: %v\n%s", err, out)
	}
	return bin
}

func TestProxyStdioUpstreamScript(t *testing.T) {
	bin := toolServer(t)
	countsFile := filepath.Join(t.TempDir(), "counts.json")
	t.Setenv("MCPTEST_COUNTS", countsFile)
	url, _ := startProxy(t, CommandDialer(bin), *mcptest.ScriptGuard())
	cs := connect(t, url, "2025-11-25")
	t.Log(mcptest.RunScript(t, cs, func() map[string]int {
		c, err := mcptest.ReadCounts(countsFile)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}))
	_ = os.Remove(countsFile)
}
