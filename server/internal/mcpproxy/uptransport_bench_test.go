//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mcpproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkUpstreamTransport sets the proxy's two upstream transports
// side by side: two proxies in front of the same upstream, one reaching
// it through http.Transport (nethttp), the other through upTransport
// (up), and the same client calling the upstream directly, through one
// and through the other, one call each way per iteration, in turn first,
// second and third. Each call runs upstream (a new symbol each time) in a
// session whose history holds 100 calls (h100) or none but the list
// (h0: a new session for each call, as in BenchmarkToolCall).
//
// It reports in microseconds the p50 and p90 of each proxy's added
// latency (its percentile less the direct one's) and their difference
// (saved: nethttp's less up's); the CPU time the process (client,
// proxies and upstream) spent during a call through each, less during a
// direct one, on average; and, measured after the timed loop, the
// allocations of one call through each less a direct one's.
func BenchmarkUpstreamTransport(b *testing.B) {
	up, _ := httpUpstream(b)
	serve := func(rt http.RoundTripper) string {
		p := New(Options{Dial: HTTPDialer(up, &http.Client{Transport: rt}), Logger: slog.New(slog.DiscardHandler)})
		mux := http.NewServeMux()
		mux.Handle("/mcp", p)
		ts := httptest.NewServer(mux)
		b.Cleanup(func() { p.Close(); ts.Close() })
		return ts.URL + "/mcp"
	}
	viaNet := serve(upstreamHTTPTransport())
	viaUp := serve(newUpstreamTransport(upstreamHTTPTransport()))
	for _, history := range []int{0, 100} {
		b.Run(fmt.Sprintf("run/h%d", history), func(b *testing.B) {
			benchTransports(b, up, viaNet, viaUp, history)
		})
	}
}

func benchTransports(b *testing.B, direct, viaNet, viaUp string, history int) {
	ctx := context.Background()
	var dcs, ncs, ucs *mcp.ClientSession
	open := func() {
		dcs, ncs, ucs = benchSession(b, direct), benchSession(b, viaNet), benchSession(b, viaUp)
		for _, cs := range []*mcp.ClientSession{ncs, ucs} {
			if _, err := cs.ListTools(ctx, nil); err != nil {
				b.Fatal(err)
			}
			for i := range history {
				benchQuote(b, cs, fmt.Sprint("H", i))
			}
		}
	}
	closeAll := func() { dcs.Close(); ncs.Close(); ucs.Close() }
	open()
	lat := [3][]time.Duration{}
	var cpu [3]time.Duration // the process's CPU time during each way's calls
	timed := func(w int, cs *mcp.ClientSession, sym string) {
		c0 := processCPU()
		lat[w] = append(lat[w], benchQuote(b, cs, sym))
		cpu[w] += processCPU() - c0
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if history == 0 && i > 0 {
			b.StopTimer()
			closeAll()
			open()
			b.StartTimer()
		}
		sym := fmt.Sprint("S", i)
		for k := range 3 {
			switch w := (i + k) % 3; w {
			case 0:
				timed(w, dcs, sym)
			case 1:
				timed(w, ncs, sym)
			case 2:
				timed(w, ucs, sym)
			}
		}
	}
	b.StopTimer()
	for _, l := range lat {
		slices.Sort(l)
	}
	for _, q := range []int{50, 90} {
		d, n, u := percentile(lat[0], q), percentile(lat[1], q), percentile(lat[2], q)
		b.ReportMetric(µs(n-d), fmt.Sprintf("nethttp-added-p%d-µs", q))
		b.ReportMetric(µs(u-d), fmt.Sprintf("up-added-p%d-µs", q))
		b.ReportMetric(µs(n-u), fmt.Sprintf("saved-p%d-µs", q))
	}
	perCall := func(d time.Duration) float64 { return µs(d) / float64(b.N) }
	b.ReportMetric(perCall(cpu[1]-cpu[0]), "nethttp-added-cpu-µs")
	b.ReportMetric(perCall(cpu[2]-cpu[0]), "up-added-cpu-µs")
	if history > 0 {
		allocs := func(cs *mcp.ClientSession, prefix string) float64 {
			i := 0
			return testing.AllocsPerRun(100, func() {
				i++
				benchQuote(b, cs, fmt.Sprintf("%s%05d", prefix, i))
			})
		}
		d, n, u := allocs(dcs, "D"), allocs(ncs, "N"), allocs(ucs, "U")
		b.ReportMetric(n-d, "nethttp-added-allocs")
		b.ReportMetric(u-d, "up-added-allocs")
	}
	closeAll()
}

// BenchmarkUpstreamHop sets the two transports side by side on one
// POST and its 200-byte JSON answer from a net/http server, read whole
// and closed, one request through each per iteration (in turn first):
// p50 and p90 of each, in microseconds, and their difference.
func BenchmarkUpstreamHop(b *testing.B) {
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 140) + `"}]}}`)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}))
	b.Cleanup(ts.Close)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"market_quote","arguments":{"symbol":"S"}}}`)
	post := func(rt http.RoundTripper) time.Duration {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPost, ts.URL, bytes.NewReader(body))
		req.Header["Content-Type"] = []string{"application/json"}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if n != int64(len(answer)) {
			b.Fatalf("read %d bytes", n)
		}
		return took
	}
	rts := []http.RoundTripper{upstreamHTTPTransport(), newUpstreamTransport(upstreamHTTPTransport())}
	lat := [2][]time.Duration{}
	for _, rt := range rts {
		post(rt)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			w := (i + k) % 2
			lat[w] = append(lat[w], post(rts[w]))
		}
	}
	b.StopTimer()
	for _, l := range lat {
		slices.Sort(l)
	}
	for _, q := range []int{50, 90} {
		n, u := percentile(lat[0], q), percentile(lat[1], q)
		b.ReportMetric(µs(n), fmt.Sprintf("nethttp-p%d-µs", q))
		b.ReportMetric(µs(u), fmt.Sprintf("up-p%d-µs", q))
		b.ReportMetric(µs(n-u), fmt.Sprintf("saved-p%d-µs", q))
	}
	for i, name := range []string{"nethttp", "up"} {
		b.ReportMetric(testing.AllocsPerRun(200, func() { post(rts[i]) }), name+"-allocs")
	}
}

// processCPU returns the CPU time the process has used, all its threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
