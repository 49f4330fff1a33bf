package mcpproxy

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUpstreamConnectionsReused: the proxy's calls upstream reuse its
// connections to the upstream, one after the other and several at once,
// instead of dialing new ones (each a TCP connect, and for https a TLS
// handshake, added to the call). Ending an upstream request as soon as
// its response came broke its stream before its end and closed the
// connection (16 to 27 new connections for 200 calls one after the
// other); http.DefaultTransport keeps only 2 idle connections per host,
// so calls at once closed and dialed connections without end.
func TestUpstreamConnectionsReused(t *testing.T) {
	srv, _ := mcptest.NewServer("")
	var dialed atomic.Int64
	up := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	url, _ := startProxyLogger(t, HTTPDialer(up.URL, nil))
	ctx := context.Background()
	for _, c := range []struct {
		name          string
		clients, each int
		most          int64 // new connections allowed
	}{
		{"one after the other", 1, 200, 2},
		{"8 at once", 8, 40, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			sessions := make([]*mcp.ClientSession, c.clients)
			for i := range sessions {
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "conns", Version: "1"}, nil).Connect(ctx,
					&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				if _, err := cs.ListTools(ctx, nil); err != nil {
					t.Fatal(err)
				}
				sessions[i] = cs
			}
			before := dialed.Load()
			var wg sync.WaitGroup
			for i, cs := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range c.each {
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": fmt.Sprint("S", i, "-", j)}})
						if err != nil || res.IsError {
							t.Errorf("call: %v %+v", err, res)
							return
						}
					}
				}()
			}
			wg.Wait()
			if n := dialed.Load() - before; n > c.most {
				t.Errorf("%d calls opened %d new upstream connections; want at most %d", c.clients*c.each, n, c.most)
			} else {
				t.Logf("%d calls opened %d new upstream connections", c.clients*c.each, n)
			}
		})
	}
}

// startProxyLogger is startProxy with the session lines discarded.
func startProxyLogger(t testing.TB, dial Dialer) (string, *Proxy) {
	t.Helper()
	p := New(Options{Dial: dial, Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", p)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() { p.Close(); ts.Close() })
	return ts.URL + "/mcp", p
}
