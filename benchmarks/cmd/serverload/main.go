// Command serverload runs only the server comparison of the benchmark
// report: preflightd against a bare net/http + Unmarshal server, each a
// process of its own, with the server on one pinned core (GOMAXPROCS=1)
// and with GOMAXPROCS=4, on every body of the comparison. It prints the
// report's "Server load" section as Markdown and leaves BENCHMARKS.md
// alone. It needs Linux, taskset and at least 2 CPUs.
//
//	cd benchmarks && go run ./cmd/serverload -rounds 3 -duration 2s
//
// To compare preflightd before and after a change in one run, build the
// earlier commit's preflightd and pass it with -baseline; -bodies and
// -modes narrow the run:
//
//	git worktree add /tmp/before HEAD~1 && (cd /tmp/before && go build -o /tmp/preflightd-before ./server/cmd/preflightd)
//	cd benchmarks && go run ./cmd/serverload -baseline /tmp/preflightd-before -bodies history_000 -modes '1 core' -rounds 6
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/agentpreflight/preflight/benchmarks/report"
)

func main() {
	var o report.Options
	flag.IntVar(&o.LoadClients, "clients", 0, "keep-alive connections on one core; four times as many on 4 cores (default 64)")
	flag.DurationVar(&o.LoadDuration, "duration", 0, "measured time per server per round (default 2s)")
	flag.IntVar(&o.LoadRounds, "rounds", 0, "rounds, alternating which server goes first (default 3)")
	flag.StringVar(&o.LoadBodies, "bodies", "", "regular expression on the bodies' names, such as 'history_000' (default all)")
	flag.StringVar(&o.LoadModes, "modes", "", "regular expression on the modes' names, '1 core' or '4 cores' (default both)")
	flag.StringVar(&o.LoadBaseline, "baseline", "", "another preflightd binary (built from an earlier commit, say) measured in the same rounds as a third server")
	verbose := flag.Bool("v", false, "log progress to standard error")
	flag.Parse()
	if *verbose {
		o.Log = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := report.RunServerLoad(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "serverload:", err)
		os.Exit(1)
	}
}
