// Command report runs the preflight benchmarks against the peers and the
// server load comparison, and regenerates BENCHMARKS.md at the repository
// root with its charts in benchmarks/results/.
//
// Run it from the repository root or benchmarks/:
//
//	cd benchmarks && go run ./cmd/report          # full run (count 6)
//	cd benchmarks && go run ./cmd/report -quick   # smoke run
//
// It never contacts any address other than 127.0.0.1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/agentpreflight/preflight/benchmarks/report"
)

func main() {
	var o report.Options
	flag.BoolVar(&o.Quick, "quick", false, "smoke run: count 1, short benchtime, one short load round; the output says so")
	flag.IntVar(&o.Count, "count", 0, "runs of every benchmark (default 6, 1 with -quick)")
	flag.StringVar(&o.BenchTime, "benchtime", "", "go test -benchtime of each benchmark (default 500ms, 20ms with -quick)")
	flag.StringVar(&o.Cases, "cases", "", "regular expression on case names, such as 'web_search|history_000' (default all)")
	profileDir := flag.String("profiledir", filepath.Join(os.TempDir(), "preflight-bench-profiles"),
		"write CPU and memory profiles of preflight's Check here (empty: none; default none with -quick)")
	flag.BoolVar(&o.SkipLoad, "noload", false, "leave out the server load comparison")
	flag.IntVar(&o.LoadClients, "load-clients", 0, "keep-alive connections of the load generator on one core, four times as many on 4 cores (default 64)")
	flag.DurationVar(&o.LoadDuration, "load-duration", 0, "measured time per server per round (default 2s, 200ms with -quick)")
	flag.IntVar(&o.LoadRounds, "load-rounds", 0, "load rounds (default 3, 1 with -quick)")
	flag.StringVar(&o.LoadBodies, "load-bodies", "", "regular expression on the server comparison's bodies, such as 'history_000' (default all)")
	flag.StringVar(&o.LoadModes, "load-modes", "", "regular expression on the server comparison's modes, '1 core' or '4 cores' (default both)")
	flag.StringVar(&o.LoadBaseline, "load-baseline", "", "another preflightd binary measured in the same load rounds as a third server (before and after side by side)")
	flag.BoolVar(&o.SkipProxy, "noproxy", false, "leave out the proxy comparison (server/internal/mcpproxy BenchmarkToolCall)")
	flag.IntVar(&o.ProxyCalls, "proxy-calls", 0, "calls each way per case of the proxy comparison (default 2000, 100 with -quick)")
	flag.StringVar(&o.Out, "out", "", "Markdown output (default BENCHMARKS.md at the repository root)")
	flag.StringVar(&o.ResultsDir, "results", "", "directory for raw output, benchstat tables and charts (default benchmarks/results)")
	flag.Parse()

	o.ProfileDir = *profileDir
	if o.Quick {
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == "profiledir" })
		if !set {
			o.ProfileDir = ""
		}
	}
	o.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := report.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
