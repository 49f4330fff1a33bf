package mcpproxy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolCall measures one tools/call of a fast read-only tool over
// Streamable HTTP: straight to the upstream server (direct), through the
// proxy when the call runs (proxied-run: decide, forward, save the
// result), and through the proxy when it is answered with the saved
// result (proxied-reuse). Besides ns/op it reports the p50 and p99 of the
// per-call latency in microseconds. Upstream, proxy and client share the
// process (and the machine's cores).
func BenchmarkToolCall(b *testing.B) {
	up, _ := httpUpstream(b)
	url, _ := startProxy(b, HTTPDialer(up, nil), mcpguard.Options{})
	cases := []struct {
		name  string
		url   string
		reuse bool
	}{
		{"direct", up, false},
		{"proxied-run", url, false},
		{"proxied-reuse", url, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: c.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sym := fmt.Sprintf("S%d", i)
				if c.reuse {
					sym = "SAME"
				}
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": sym}})
				lat = append(lat, time.Since(start))
				if err != nil || res.IsError {
					b.Fatalf("call %d: %v %+v", i, err, res)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
