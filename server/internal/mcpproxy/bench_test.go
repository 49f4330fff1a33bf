package mcpproxy

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkToolCall measures what the proxy adds to one tools/call of a
// fast read-only tool (mcptest's market_quote) over Streamable HTTP: the
// same MCP Go SDK client calls the upstream server directly and through
// the proxy, one call each way per iteration (which goes first
// alternates), so that both see the same machine load. Cases: a call
// that runs (a new symbol each time: the proxy decides, forwards, saves
// the result and records it) and a reuse (the same symbol: the proxy
// answers with the saved result, the direct call runs upstream), with no
// other call in the proxy session's history (h0: a fresh session for
// each call that runs, its tools listed beforehand) and with 100 (h100,
// the most a session keeps).
//
// A third call each iteration goes through a bare HTTP relay
// (httputil.ReverseProxy, flushing at once) in front of the same
// upstream: the cost of one more HTTP hop with no MCP in it, the floor
// of any proxy that forwards over HTTP.
//
// Besides ns/op (all three calls) it reports, in microseconds, the p50
// and p90 of the direct, relayed and proxied latencies, the proxy's
// added latency, the difference of the proxied and direct percentiles
// (added-p50-µs, added-p90-µs), and the relay's (hop-p50-µs,
// hop-p90-µs). Upstream, relay, proxy and client share the process and
// the machine's cores; the proxy logs nothing (its session lines go to a
// discarding logger).
func BenchmarkToolCall(b *testing.B) {
	up, counts := httpUpstream(b)
	p := New(Options{Dial: HTTPDialer(up, nil), Logger: slog.New(slog.DiscardHandler)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", p)
	ts := httptest.NewServer(mux)
	b.Cleanup(func() { p.Close(); ts.Close() })
	proxied := ts.URL + "/mcp"
	target, err := url.Parse(up)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1                    // SSE: every write at once
	rp.ErrorLog = log.New(io.Discard, "", 0) // a closed session's stream ends with an error
	relay := httptest.NewServer(rp)
	b.Cleanup(relay.Close)

	for _, reuse := range []bool{false, true} {
		for _, history := range []int{0, 100} {
			name := fmt.Sprintf("run/h%d", history)
			if reuse {
				name = fmt.Sprintf("reuse/h%d", history)
			}
			b.Run(name, func(b *testing.B) {
				benchLatency(b, up, relay.URL, proxied, counts, reuse, history)
			})
		}
	}
}

// benchLatency is one case of BenchmarkToolCall.
func benchLatency(b *testing.B, direct, relayed, proxied string, counts *mcptest.Counters, reuse bool, history int) {
	ctx := context.Background()
	fresh := !reuse && history == 0 // a new session for each call
	var dcs, rcs, pcs *mcp.ClientSession
	open := func() {
		dcs, rcs, pcs = benchSession(b, direct), benchSession(b, relayed), benchSession(b, proxied)
		// Tools listed beforehand: the proxy needs the list before the
		// first call, and learns it from this one.
		if _, err := pcs.ListTools(ctx, nil); err != nil {
			b.Fatal(err)
		}
		for i := range history {
			benchQuote(b, pcs, fmt.Sprint("H", i))
		}
		if reuse {
			benchQuote(b, pcs, "SAME") // runs; the timed calls reuse it
		}
	}
	closeAll := func() { dcs.Close(); rcs.Close(); pcs.Close() }
	open()
	directLat := make([]time.Duration, 0, b.N)
	relayedLat := make([]time.Duration, 0, b.N)
	proxiedLat := make([]time.Duration, 0, b.N)
	ran := 0 // upstream runs besides the timed calls'
	before := counts.Snapshot()[mcptest.Quote]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if fresh && i > 0 {
			b.StopTimer()
			closeAll()
			n := counts.Snapshot()[mcptest.Quote]
			open()
			ran += counts.Snapshot()[mcptest.Quote] - n
			b.StartTimer()
		}
		sym := fmt.Sprint("S", i)
		if reuse {
			sym = "SAME"
		}
		// Each of the three goes first, second and third in turn.
		for k := range 3 {
			switch (i + k) % 3 {
			case 0:
				directLat = append(directLat, benchQuote(b, dcs, sym))
			case 1:
				relayedLat = append(relayedLat, benchQuote(b, rcs, sym))
			case 2:
				proxiedLat = append(proxiedLat, benchQuote(b, pcs, sym))
			}
		}
	}
	b.StopTimer()
	closeAll()
	// Every direct and relayed call runs upstream; a proxied one only
	// when it is not a reuse.
	want := 2 * b.N
	if !reuse {
		want = 3 * b.N
	}
	if got := counts.Snapshot()[mcptest.Quote] - before - ran; got != want {
		b.Fatalf("%d calls ran upstream, want %d", got, want)
	}
	slices.Sort(directLat)
	slices.Sort(relayedLat)
	slices.Sort(proxiedLat)
	for _, q := range []int{50, 90} {
		d, r, p := percentile(directLat, q), percentile(relayedLat, q), percentile(proxiedLat, q)
		b.ReportMetric(µs(d), fmt.Sprintf("direct-p%d-µs", q))
		b.ReportMetric(µs(r), fmt.Sprintf("relay-p%d-µs", q))
		b.ReportMetric(µs(p), fmt.Sprintf("proxy-p%d-µs", q))
		b.ReportMetric(µs(p-d), fmt.Sprintf("added-p%d-µs", q))
		b.ReportMetric(µs(r-d), fmt.Sprintf("hop-p%d-µs", q))
	}
}

// benchSession connects the benchmark's client to url.
func benchSession(b *testing.B, url string) *mcp.ClientSession {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// benchQuote calls market_quote for sym and returns how long it took; it
// fails b unless the call answered with the tool's result.
func benchQuote(b *testing.B, cs *mcp.ClientSession, sym string) time.Duration {
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": sym}})
	took := time.Since(start)
	if err != nil || res.IsError {
		b.Fatalf("quote %s: %v %+v", sym, err, res)
	}
	return took
}

// percentile returns the q-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*q + 99) / 100
	return sorted[max(i-1, 0)]
}

func µs(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
