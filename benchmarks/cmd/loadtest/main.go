// Command loadtest drives the real preflightd binary with concurrent
// clients and checks every answer against the library's own result.
//
// It builds preflightd with `go build` (or uses -bin), starts it on
// 127.0.0.1:0, and runs -clients workers for -duration or until -requests
// requests are done, whichever comes first; then it stops the server with
// SIGTERM and exits by itself. The mix covers valid and invalid bodies on
// both POST routes, the same arguments through the MCP tools, oversized
// bodies, a wrong media type and /health. A check or decision body must be
// byte for byte what preflight.Check or preflight.Decide returns in
// process; an error must carry the library's status and error code.
//
// It reports throughput, p50/p99 latency, error counts and the server's
// memory (VmRSS and VmHWM from /proc/<pid>/status, sampled every 100 ms):
// the resident size after warm-up and at the end. It fails (exit status 1)
// on any 5xx, connection error or wrong answer. It only ever talks to
// loopback.
//
//	cd benchmarks && go run ./cmd/loadtest -duration 25s -clients 16 -out cmd/loadtest/RESULTS.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "loadtest: %v\nusage: loadtest [flags]\nRun 'loadtest -h' for the flags.\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "loadtest: %v\n", err)
		os.Exit(1)
	}
}

const summary = "Drives the real preflightd binary on loopback with concurrent clients, checks every answer\n" +
	"against the library's own result and reports throughput, latency and memory."

// usageError is a mistake on the command line; loadtest exits 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// options are the command-line flags.
type options struct {
	duration time.Duration
	requests int64
	clients  int
	warmup   time.Duration
	bin      string
	out      string
	mcpProxy bool
}

func parseFlags(args []string, out io.Writer) (options, error) {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	var o options
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long to send requests (at most 10m)")
	fs.Int64Var(&o.requests, "requests", 5_000_000, "stop after this many requests, even before -duration")
	fs.IntVar(&o.clients, "clients", 16, "concurrent clients (1..512)")
	fs.DurationVar(&o.warmup, "warmup", 0, "when to take the warm-up memory sample; 0 means a fifth of -duration")
	fs.StringVar(&o.bin, "bin", "", "a prebuilt preflightd binary; empty builds one with go build")
	fs.StringVar(&o.out, "out", "", "also write the report as Markdown to this file")
	fs.BoolVar(&o.mcpProxy, "mcp-proxy", false, "measure `preflightd proxy` in front of the MCP test tools instead of the reference server")
	fs.SetOutput(io.Discard) // errors are reported by main, the help below
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			return o, usageError{err.Error()}
		}
		fmt.Fprintf(out, "usage: loadtest [flags]\n\n%s\n\nflags:\n", summary)
		fs.SetOutput(out)
		fs.PrintDefaults()
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, usagef("unexpected arguments %q", fs.Args())
	case o.duration <= 0 || o.duration > 10*time.Minute:
		return o, usagef("-duration %v: want more than 0 and at most 10m", o.duration)
	case o.requests <= 0:
		return o, usagef("-requests %d: want at least 1", o.requests)
	case o.clients < 1 || o.clients > 512:
		return o, usagef("-clients %d: want 1..512", o.clients)
	}
	if o.warmup <= 0 || o.warmup >= o.duration {
		o.warmup = o.duration / 5
	}
	return o, nil
}

// run is the whole program; it returns an error when the run fails.
func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseFlags(args, out)
	if err != nil {
		return err
	}
	if o.mcpProxy {
		return runProxyLoad(ctx, o, out)
	}
	cases, err := buildCases()
	if err != nil {
		return fmt.Errorf("computing the expected answers: %w", err)
	}
	bin := o.bin
	if bin == "" {
		dir, err := os.MkdirTemp("", "loadtest")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if bin, err = buildServer(ctx, dir); err != nil {
			return err
		}
	}
	srv, err := startServer(ctx, bin)
	if err != nil {
		return err
	}
	defer srv.kill()

	sampler := newMemSampler(srv.pid(), o.warmup)
	go sampler.run()
	res := drive(ctx, "http://"+srv.addr, cases, o)
	sampler.stop()
	exitErr := srv.stop()

	rep := report{opts: o, res: res, mem: sampler.result(), serverExit: exitErr, machine: describeMachine()}
	text := rep.markdown()
	fmt.Fprint(out, text)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return rep.verdict()
}
