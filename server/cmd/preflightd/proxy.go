package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/internal/cli"
	"github.com/agentpreflight/preflight/server/internal/mcpproxy"
)

const proxyUsage = `usage:
  preflightd proxy --listen ADDR --upstream URL [flags]        guard a Streamable HTTP MCP server
  preflightd proxy --listen ADDR [flags] -- COMMAND [ARG...]    guard an MCP server over stdio (one process per session)

The proxy serves MCP Streamable HTTP at /mcp, forwards every message both
ways unchanged, and answers tools/call through preflight: one ledger,
budget and call limit per MCP session.

flags:
`

// proxyOptions are the parsed flags of the proxy subcommand.
type proxyOptions struct {
	listen     string
	upstream   string
	command    []string
	operations string
	budgetUSD  string
	maxCalls   int
	ttl        time.Duration
	idle       time.Duration
	trustHost  bool
	calls      callBounds
}

// callBounds are the flags that bound tool calls (issue 30).
type callBounds struct {
	perSession, total int
	timeout           time.Duration
	maxResult         int64
}

// proxyUsageLine is the line a mistake on the command line prints.
const proxyUsageLine = "usage: preflightd proxy --listen ADDR (--upstream URL | -- COMMAND [ARG...]) [flags]"

// parseProxyFlags parses the proxy's flags. -h and --help write the usage
// to stdout and return flag.ErrHelp; a mistake is a *cli.UsageError.
func parseProxyFlags(args []string, stdout io.Writer) (proxyOptions, error) {
	fs := flag.NewFlagSet("preflightd proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	usagef := func(format string, args ...any) error {
		return &cli.UsageError{Err: fmt.Errorf(format, args...), Usage: proxyUsageLine, Help: "preflightd proxy"}
	}
	var o proxyOptions
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8090", "listen `address`; port 0 picks a free port")
	fs.StringVar(&o.upstream, "upstream", "", "`URL` of the upstream Streamable HTTP MCP server (or give a command after --)")
	fs.StringVar(&o.operations, "operations", "", "tool-spec `file`: a catalog file (a regular file of at most 4 MiB) whose operations may carry priceUsd, ttlSeconds and retryCap")
	fs.StringVar(&o.budgetUSD, "budget-usd", "", "`dollars` each MCP session may spend on priced tools; empty means no budget")
	fs.IntVar(&o.maxCalls, "max-calls", 0, "tool calls each MCP session may make (`n`); 0 means no limit")
	fs.DurationVar(&o.ttl, "ttl", 5*time.Minute, "how long a result of a read-only tool is reused (`duration`, whole seconds); 0 disables reuse")
	fs.DurationVar(&o.idle, "session-idle", 30*time.Minute, "end a session with no request for this long (`duration`); 0 means never")
	fs.BoolVar(&o.trustHost, "trust-proxy-host", false, "accept any Host header on a loopback listener (behind a reverse proxy)")
	// Bounds on tool calls.
	fs.IntVar(&o.calls.perSession, "max-calls-in-flight-per-session", mcpproxy.DefaultMaxCallsInFlightPerSession, "tool calls one session may have in flight (`n`); one more is refused at once with a JSON-RPC error")
	fs.IntVar(&o.calls.total, "max-calls-in-flight", mcpproxy.DefaultMaxCallsInFlight, "tool calls all sessions together may have in flight (`n`); one more is refused at once with a JSON-RPC error")
	fs.DurationVar(&o.calls.timeout, "call-timeout", mcpproxy.DefaultCallTimeout, "how long a tool call waits for the upstream (`duration`); then it is cancelled upstream and answered with an error")
	fs.Int64Var(&o.calls.maxResult, "max-result-bytes", mcpproxy.DefaultMaxResultBytes, "largest message read from the upstream (`bytes`); a larger result is not read and the call gets an error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, proxyUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return o, err
		}
		return o, usagef("proxy: %v", err)
	}
	o.command = fs.Args()
	switch {
	case o.listen == "":
		return o, usagef("proxy: --listen is empty; want a listen address such as 127.0.0.1:8090 (port 0 picks a free port)")
	case o.upstream == "" && len(o.command) == 0:
		return o, usagef("proxy: give --upstream URL or a command after --")
	case o.upstream != "" && len(o.command) > 0:
		return o, usagef("proxy: give --upstream URL or a command after --, not both")
	case o.idle < 0:
		return o, usagef("proxy: --session-idle must be 0 or more")
	case o.maxCalls < 0:
		return o, errors.New("proxy: --max-calls must be 0 or more")
	case o.calls.perSession < 1 || o.calls.total < 1 || o.calls.timeout <= 0 || o.calls.maxResult < 1:
		return o, usagef("proxy: --max-calls-in-flight-per-session, --max-calls-in-flight, --call-timeout and --max-result-bytes must be positive")
	case o.ttl < 0 || o.ttl%time.Second != 0:
		return o, fmt.Errorf("proxy: --ttl %s must be a non-negative whole number of seconds", o.ttl)
	}
	if o.upstream != "" {
		u, err := url.Parse(o.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, fmt.Errorf("proxy: --upstream %q must be an absolute http(s) URL", o.upstream)
		}
	}
	if o.budgetUSD != "" {
		if f, err := strconv.ParseFloat(o.budgetUSD, 64); err != nil || f < 0 {
			return o, fmt.Errorf("proxy: --budget-usd %q must be a non-negative decimal", o.budgetUSD)
		}
	}
	return o, nil
}

// guardOptions turns the flags (and the spec file) into the options of
// every session's guard.
func (o proxyOptions) guardOptions() (mcpguard.Options, error) {
	g := mcpguard.Options{
		Session: agent.SessionOptions{
			Guard: agent.GuardOptions{BudgetUSD: jsonNumber(o.budgetUSD), MaxCalls: o.maxCalls},
			// One store for every session; references never collide.
			Store: agent.NewMemoryStore(4096, 64<<20),
		},
		Defaults: agent.ToolSpec{TTLSeconds: jsonNumber(strconv.FormatInt(int64(o.ttl/time.Second), 10))},
	}
	if o.operations != "" {
		data, err := readCatalogFile(o.operations)
		if err != nil {
			return g, err
		}
		specs, err := agent.DecodeToolSpecs(data)
		if err != nil {
			return g, describeFileError("--operations "+o.operations, err)
		}
		g.Specs = specs
	}
	return g, nil
}

// runProxy runs the proxy subcommand until ctx is done.
func runProxy(ctx context.Context, args []string, stdout, logOut io.Writer) error {
	o, err := parseProxyFlags(args, stdout)
	if err != nil {
		return err
	}
	gopts, err := o.guardOptions()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(logOut, nil))
	dial := mcpproxy.HTTPDialer(o.upstream, nil)
	if len(o.command) > 0 {
		dial = mcpproxy.CommandDialer(o.command[0], o.command[1:]...)
	}
	p := mcpproxy.New(mcpproxy.Options{Dial: dial, Guard: gopts, Logger: logger,
		IdleTimeout: o.idle, TrustHost: o.trustHost,
		MaxCallsInFlightPerSession: o.calls.perSession, MaxCallsInFlight: o.calls.total,
		CallTimeout: o.calls.timeout, MaxResultBytes: o.calls.maxResult})
	defer p.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", p)

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	ops := defaultOps()
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: ops.readHeaderTimeout,
		IdleTimeout:       ops.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	upstream := o.upstream
	if upstream == "" {
		upstream = "stdio: " + o.command[0]
	}
	logger.Info("listening", "addr", ln.Addr().String(), "mode", "proxy", "upstream", upstream)
	// Closing the proxy first ends the long-lived streams, so that
	// Shutdown can finish.
	return serve(ctx, srv, ln, logger, ops.shutdownTimeout, func() { p.Close() }, nil)
}

func jsonNumber(s string) json.Number { return json.Number(s) }

// describeFileError lists every problem of a file with its JSON Pointer.
func describeFileError(what string, err error) error {
	var e *preflight.Error
	if !errors.As(err, &e) {
		return fmt.Errorf("%s: %w", what, err)
	}
	var b strings.Builder
	// The decoders' own summary speaks of a request body: count the
	// file's problems instead, and let each say what it is.
	switch n := len(e.Details); n {
	case 0:
		fmt.Fprintf(&b, "%s: %s: %s", what, e.Code, e.Message)
	case 1:
		fmt.Fprintf(&b, "%s: 1 problem (%s):", what, e.Code)
	default:
		fmt.Fprintf(&b, "%s: %d problems (%s):", what, n, e.Code)
	}
	for _, d := range e.Details {
		at := d.Path
		if at == "" {
			at = "(the whole file)"
		}
		fmt.Fprintf(&b, "\n  %s: %s (%s)", at, d.Message, d.Code)
	}
	return errors.New(b.String())
}
