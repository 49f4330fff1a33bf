// Command overhead measures what metrics and tracing cost the reference
// server: the same handler, server.New, is served three ways (observability
// off; Prometheus metrics on; metrics and OpenTelemetry tracing on, spans
// batched to an exporter that discards them) and driven with the load
// generator in interleaved rounds, the order rotating each round. It prints
// each variant's median requests per second and its ratio to "off".
//
//	go run ./cmd/overhead -rounds 6 -duration 2s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/agentpreflight/preflight/benchmarks"
	"github.com/agentpreflight/preflight/benchmarks/load"
	"github.com/agentpreflight/preflight/server"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func main() {
	rounds := flag.Int("rounds", 6, "interleaved rounds")
	duration := flag.Duration("duration", 2*time.Second, "measured time per variant per round")
	clients := flag.Int("clients", 8, "concurrent keep-alive clients")
	flag.Parse()
	if err := run(*rounds, *duration, *clients); err != nil {
		fmt.Fprintln(os.Stderr, "overhead:", err)
		os.Exit(1)
	}
}

type variant struct {
	name string
	addr string
	rps  []float64
}

func run(rounds int, duration time.Duration, clients int) error {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	configs := []struct {
		name string
		cfg  server.Config
	}{
		{"off", server.Config{}},
		{"metrics", server.Config{Metrics: prometheus.NewRegistry()}},
		{"metrics+tracing", server.Config{Metrics: prometheus.NewRegistry(), TracerProvider: tp}},
	}
	var vs []*variant
	for _, c := range configs {
		l, err := load.Listen(server.New(c.cfg))
		if err != nil {
			return err
		}
		defer l.Close()
		vs = append(vs, &variant{name: c.name, addr: l.Addr})
	}
	targets := []struct{ path, file string }{
		{"/v0.2/preflight/tool-call", "decide_history_010.json"},
		{"/check-request", "check_nested_order_valid.json"},
	}
	fmt.Printf("CPUs: %d; load average before: %s", runtime.NumCPU(), loadavg())
	for _, tg := range targets {
		body, err := os.ReadFile(filepath.Join(benchmarks.CorpusDir(), tg.file))
		if err != nil {
			return err
		}
		for _, v := range vs {
			v.rps = nil
		}
		for r := range rounds {
			for i := range vs {
				v := vs[(i+r)%len(vs)]
				st, err := load.Drive(context.Background(), v.addr, tg.path, body, load.Config{Clients: clients, Duration: duration})
				if err != nil {
					return fmt.Errorf("%s %s: %w", v.name, tg.path, err)
				}
				v.rps = append(v.rps, st.RPS())
			}
		}
		base := median(vs[0].rps)
		fmt.Printf("\nPOST %s (%s), %d rounds x %v, %d clients\n", tg.path, tg.file, rounds, duration, clients)
		for _, v := range vs {
			fmt.Printf("  %-16s median %8.0f req/s  ratio %.3f  rounds %v\n", v.name, median(v.rps), median(v.rps)/base, rounded(v.rps))
		}
	}
	fmt.Printf("load after: %s", loadavg())
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func rounded(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown\n"
	}
	return string(b)
}
