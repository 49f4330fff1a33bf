package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/agentpreflight/preflight/server/internal/auth"
	"github.com/agentpreflight/preflight/server/internal/cli"
	"github.com/agentpreflight/preflight/server/internal/mcpproxy"
	"github.com/agentpreflight/preflight/server/internal/reqid"
	"github.com/agentpreflight/preflight/server/internal/sharedstate"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

const proxyUsage = `usage:
  preflightd proxy --listen ADDR --upstream URL [flags]        guard a Streamable HTTP MCP server
  preflightd proxy --listen ADDR [flags] -- COMMAND [ARG...]    guard an MCP server over stdio (one process per session)

The proxy serves MCP Streamable HTTP at /mcp, forwards every message both
ways unchanged, and answers tools/call through preflight: one ledger,
budget and call limit per run, named by the client's Preflight-Run header
or _meta "io.agentpreflight/run" (else the MCP session's own run, else
the caller's default run). A call repeated within --idempotency-window
(re-issued after a broken stream, say) gets the first call's answer
instead of running twice. With --store, proxies behind one load
balancer keep that state in Redis or PostgreSQL: one budget per run, and
a call re-issued to another proxy gets the first call's answer.

Bounds, each a flag below: at most --max-sessions sessions at once (503
past it), --max-sessions-per-client from one remote IP address (429) and,
with a command upstream, --max-processes processes (503). A session with
no request after its initialize ends after --session-init-timeout, one
with no request at all after --session-idle. A POST body must arrive
within --body-timeout (408). A request whose Origin header is not one of
--allow-origin nor on a loopback host gets 403 (requests without Origin
are served); a POST that
is not application/json gets 415. On shutdown new connections are refused
and requests on open ones get 503 with Retry-After before the sessions
close. Logs show a session id only as a digest.

flags:
`

// proxyOptions are the parsed flags of the proxy subcommand.
type proxyOptions struct {
	listen       string
	upstream     string
	command      []string
	operations   string
	signingKey   string // receipt signing key file; empty signs nothing
	budgetUSD    string
	maxCalls     int
	ttl          time.Duration
	idle         time.Duration
	trustHost    bool
	maxSessions  int
	perClient    int
	maxProcesses int // 0 for an HTTP upstream
	initTimeout  time.Duration
	bodyTimeout  time.Duration
	maxBatch     int
	maxScopes    int
	scopeIdle    time.Duration
	idempotency  time.Duration
	allowOrigins []string // normalized
	calls        callBounds
	principals   string // the principals file; empty for one anonymous principal on loopback
	metricsAddr  string // the Prometheus listener; empty for none
	store        string // the shared store's URL (--store); empty for state in this process
	approvalKey  string // the file of the key that seals approvals (--approval-key); empty for a random key per process

	strict          bool           // configuration problems are errors, not warnings
	forwardAuth     bool           // send the client's Authorization upstream
	upstreamHeaders []headerSource // headers set on every upstream request
}

// callBounds are the flags that bound tool calls (issue 30).
type callBounds struct {
	perSession, perClient, total int
	timeout                      time.Duration
	maxResult                    int64
}

// defaultMaxProcesses bounds the upstream processes of a command upstream
// (one per session): a typical stdio MCP server takes about 10 MB, so 32
// keep the worst case near a third of a gigabyte.
const defaultMaxProcesses = 32

// maxProxyTimeout bounds the proxy's timeouts, to catch a unit typo (30m
// for 30s) at start.
const maxProxyTimeout = time.Hour

// originsFlag collects --allow-origin values: the flag may repeat, and
// each value may be a comma-separated list.
type originsFlag struct{ list *[]string }

func (f originsFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f originsFlag) Set(s string) error {
	for _, o := range strings.Split(s, ",") {
		n, err := mcpproxy.NormalizeOrigin(strings.TrimSpace(o))
		if err != nil {
			return err
		}
		*f.list = append(*f.list, n)
	}
	return nil
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
	fs.StringVar(&o.operations, "operations", "", "tool-spec `file`: a catalog file (a regular file of at most 4 MiB) whose operations may carry priceUsd, ttlSeconds, retryCap, idempotencySeconds and approval")
	fs.StringVar(&o.budgetUSD, "budget-usd", "", "`dollars` each run may spend on priced tools; empty means no budget")
	fs.IntVar(&o.maxCalls, "max-calls", 0, "tool calls each run may make (`n`); 0 means no limit")
	fs.DurationVar(&o.ttl, "ttl", 5*time.Minute, "how long a result of a read-only tool is reused (`duration`, whole seconds); 0 disables reuse")
	fs.DurationVar(&o.idle, "session-idle", 30*time.Minute, "end a session with no request for this long (`duration`); 0 means never")
	fs.BoolVar(&o.trustHost, "trust-proxy-host", false, "accept any Host header on a loopback listener (behind a reverse proxy)")
	fs.IntVar(&o.maxSessions, "max-sessions", mcpproxy.DefaultMaxSessions, "sessions open at once (`n`); past it an initialize gets 503")
	fs.IntVar(&o.perClient, "max-sessions-per-client", mcpproxy.DefaultMaxSessionsPerClient, "sessions open at once from one remote IP address or IPv6 /64 (`n`), never read from a header; past it an initialize gets 429")
	fs.IntVar(&o.maxProcesses, "max-processes", defaultMaxProcesses, "upstream processes alive at once with a command upstream (`n`), one per session and one for the stateless requests; past it an initialize, or a stateless request that needs its process started, gets 503")
	fs.IntVar(&o.maxScopes, "max-scopes", mcpproxy.DefaultMaxScopes, "runs guarded at once (`n`), each with its ledger and saved results; past it a call that starts a run gets an error (503 without a session)")
	fs.DurationVar(&o.scopeIdle, "scope-idle", 30*time.Minute, "end a run (its ledger, budget and saved results) with no request for this long (`duration`); a session's own run ends with the session")
	fs.DurationVar(&o.idempotency, "idempotency-window", 5*time.Minute, "how long a completed call answers an identical call instead of running again (`duration`, whole seconds; a tool's idempotencySeconds overrides it); 0 turns it off")
	fs.DurationVar(&o.initTimeout, "session-init-timeout", mcpproxy.DefaultInitTimeout, "end a session with no request after its initialize for this long (`duration`)")
	fs.IntVar(&o.maxBatch, "max-batch", mcpproxy.DefaultMaxBatch, "messages one JSON-RPC batch may hold (`n`); a longer batch gets 413 before it is decoded")
	fs.DurationVar(&o.bodyTimeout, "body-timeout", mcpproxy.DefaultBodyTimeout, "longest wait for a POST body (`duration`); past it 408 and the connection is closed")
	fs.Var(originsFlag{&o.allowOrigins}, "allow-origin", "web `origin` (scheme://host[:port]) whose browser requests are served; repeat or separate with commas. A request with any other Origin header gets 403, but for loopback origins (localhost, 127.0.0.1, [::1], any port); one without Origin is served")
	fs.StringVar(&o.principals, "principals", "", "principals `file`: who may call (API keys stored as SHA-256 digests, JWTs checked against a JWKS) and, per principal, what it may do; without it the proxy serves one anonymous principal and must listen on a loopback address")
	fs.BoolVar(&o.strict, "strict", false, "treat configuration problems as errors: a budget no price can bind stops the start; a configured tool the upstream does not list, or an upstream schema the guard cannot use, is logged as an error instead of a warning")
	fs.BoolVar(&o.forwardAuth, "upstream-forward-authorization", false, "send the client's Authorization header to the --upstream server (off: the client's credentials stay at the proxy)")
	fs.Var(headersFlag{&o.upstreamHeaders}, "upstream-header", "`NAME=env:VARIABLE` or NAME=file:PATH: a header set on every request to the --upstream server, its value read from the environment or from a file (read again when it changes); repeat for more. Never a value on the command line")
	fs.StringVar(&o.store, "store", "", "`URL` of a store that several proxy replicas share: redis://[USER:PASSWORD@]HOST[:PORT][/DB], redis+cluster://[USER:PASSWORD@]HOST:PORT[?addr=HOST2:PORT2&addr=...] (a Redis Cluster) or postgres://USER:PASSWORD@HOST[:PORT]/DATABASE. Each run's ledger (money, calls, history), results saved for reuse and exactly-once claims live there, so that a run spends one budget and a call runs once whichever replica serves it; empty keeps them in this process")
	fs.StringVar(&o.approvalKey, "approval-key", "", "`file` holding the key (at least 32 bytes; surrounding whitespace is trimmed) that seals the requestState of calls awaiting a person's approval (a tool-spec file's \"approval\"), HMAC-SHA256; empty means a random key per process, so replicas sharing --store need one file")
	fs.StringVar(&o.signingKey, "signing-key", "", "receipt signing key `file`: PEM, an Ed25519 PRIVATE KEY (PKCS#8) first, earlier keys after it; each decided call's result then carries in _meta a receipt, the request decided and the decision, chained per run, and GET /.well-known/preflight-receipt-keys and /.well-known/preflight-catalog serve the public keys and the caller's run's catalog (for preflight verify); empty signs nothing")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`address`/metrics on a listener of their own (tool calls by answer, verdict and reason, upstream latency, sessions and scopes open, dollars by principal); empty serves none")
	// Bounds on tool calls.
	fs.IntVar(&o.calls.perSession, "max-calls-in-flight-per-session", mcpproxy.DefaultMaxCallsInFlightPerSession, "tool calls one session may have in flight (`n`); one more is refused at once with a JSON-RPC error")
	fs.IntVar(&o.calls.perClient, "max-calls-in-flight-per-client", mcpproxy.DefaultMaxCallsInFlightPerClient, "tool calls the sessions of one remote address may have in flight together (`n`); one more is refused at once with a JSON-RPC error")
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
		// The flag package quotes the value in its message: never for a
		// header, whose value may be a secret given by mistake.
		if _, after, ok := strings.Cut(err.Error(), "for flag -upstream-header: "); ok {
			return o, usagef("proxy: %s", after)
		}
		return o, usagef("proxy: %v", err)
	}
	o.command = fs.Args()
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case o.listen == "":
		return o, usagef("proxy: --listen is empty; want a listen address such as 127.0.0.1:8090 (port 0 picks a free port)")
	case o.upstream == "" && len(o.command) == 0:
		return o, usagef("proxy: give --upstream URL or a command after --")
	case o.upstream != "" && len(o.command) > 0:
		return o, usagef("proxy: give --upstream URL or a command after --, not both")
	case o.idle < 0:
		return o, usagef("proxy: --session-idle must be 0 or more")
	case o.maxScopes < 1:
		return o, usagef("proxy: --max-scopes %d must be 1 or more", o.maxScopes)
	case o.scopeIdle <= 0 || o.scopeIdle > 24*time.Hour:
		return o, usagef("proxy: --scope-idle %v is out of range: want a duration above 0 and at most 24h", o.scopeIdle)
	case o.idempotency < 0 || o.idempotency%time.Second != 0 || o.idempotency > maxProxyTimeout:
		return o, usagef("proxy: --idempotency-window %v must be a whole number of seconds from 0 to %v", o.idempotency, maxProxyTimeout)
	case o.maxSessions < 1:
		return o, usagef("proxy: --max-sessions %d must be 1 or more", o.maxSessions)
	case o.perClient < 1:
		return o, usagef("proxy: --max-sessions-per-client %d must be 1 or more", o.perClient)
	case o.maxProcesses < 1:
		return o, usagef("proxy: --max-processes %d must be 1 or more", o.maxProcesses)
	case set["max-processes"] && o.upstream != "":
		return o, usagef("proxy: --max-processes applies to a command upstream (after --), not to --upstream URL")
	case o.initTimeout <= 0 || o.initTimeout > maxProxyTimeout:
		return o, usagef("proxy: --session-init-timeout %v is out of range: want a duration above 0 and at most %v", o.initTimeout, maxProxyTimeout)
	case o.maxBatch < 1:
		return o, usagef("proxy: --max-batch %d must be 1 or more", o.maxBatch)
	case o.bodyTimeout <= 0 || o.bodyTimeout > maxProxyTimeout:
		return o, usagef("proxy: --body-timeout %v is out of range: want a duration above 0 and at most %v", o.bodyTimeout, maxProxyTimeout)
	case o.maxCalls < 0:
		return o, errors.New("proxy: --max-calls must be 0 or more")
	case o.calls.perSession < 1 || o.calls.perClient < 1 || o.calls.total < 1 || o.calls.timeout <= 0 || o.calls.maxResult < 1:
		return o, usagef("proxy: --max-calls-in-flight-per-session, --max-calls-in-flight-per-client, --max-calls-in-flight, --call-timeout and --max-result-bytes must be positive")
	case o.ttl < 0 || o.ttl%time.Second != 0:
		return o, fmt.Errorf("proxy: --ttl %s must be a non-negative whole number of seconds", o.ttl)
	}
	if o.upstream != "" {
		u, err := url.Parse(o.upstream)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return o, fmt.Errorf("proxy: --upstream %q must be an absolute http(s) URL", o.upstream)
		}
	}
	if o.upstream != "" {
		o.maxProcesses = 0
	}
	if o.store != "" {
		if err := checkStoreURL(o.store); err != nil {
			return o, usagef("proxy: %v", err)
		}
	}
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			return o, usagef("proxy: --metrics-addr %q is not a host:port address such as 127.0.0.1:9464", o.metricsAddr)
		}
		if _, port, _ := net.SplitHostPort(o.listen); o.metricsAddr == o.listen && port != "0" {
			return o, usagef("proxy: --metrics-addr %q is the proxy's own --listen; give metrics a listener of their own", o.metricsAddr)
		}
	}
	if o.principals == "" && !loopbackListen(o.listen) {
		return o, usagef("proxy: --listen %s is not a loopback address and no --principals file is given: anyone who reaches the port would be served; give --principals FILE (API keys or JWTs), or listen on 127.0.0.1", o.listen)
	}
	// The guard's own rule decides, so that a value accepted here is one
	// every session's guard accepts.
	if _, err := agent.NewGuard(nil, &agent.GuardOptions{BudgetUSD: jsonNumber(o.budgetUSD)}); err != nil {
		return o, usagef("proxy: --budget-usd %q must be a non-negative decimal below 1e30 written as a JSON number, such as 5, 0.50 or 1e3 (no NaN, Inf, leading dot, hex or underscores)", o.budgetUSD)
	}
	return o, nil
}

// guardOptions turns the flags (and the spec file) into the options of
// every session's guard.
func (o proxyOptions) guardOptions() (mcpguard.Options, error) {
	g := mcpguard.Options{
		BudgetUSD: jsonNumber(o.budgetUSD),
		MaxCalls:  o.maxCalls,
		// One store for every session (4096 results, 64 MiB), each with a
		// quota of its own (256, 4 MiB) that no other session's traffic
		// evicts within its TTL.
		Results: tools.NewSharedResultStore(nil),
		Defaults: tools.Spec{TTLSeconds: jsonNumber(strconv.FormatInt(int64(o.ttl/time.Second), 10)),
			IdempotencySeconds: jsonNumber(strconv.FormatInt(int64(o.idempotency/time.Second), 10))},
	}
	var err error
	if g.Receipts, err = loadSigningKey("proxy: --signing-key", o.signingKey); err != nil {
		return g, err
	}
	if o.operations != "" {
		data, err := readCatalogFile(o.operations)
		if err != nil {
			return g, err
		}
		specs, err := tools.DecodeSpecs(data)
		if err != nil {
			return g, describeFileError("--operations "+o.operations, err)
		}
		g.Specs = specs
	}
	if o.approvalKey != "" {
		key, err := readApprovalKey(o.approvalKey)
		if err != nil {
			return g, err
		}
		g.Approvals.Key = key
	}
	return g, nil
}

// maxApprovalKeyFile bounds the --approval-key file.
const maxApprovalKeyFile = 4096

// readApprovalKey reads the --approval-key file: its bytes, surrounding
// whitespace trimmed, at least mcpguard.MinApprovalKeyBytes of them.
func readApprovalKey(file string) ([]byte, error) {
	info, err := os.Stat(file) // before opening: opening a FIFO waits for a writer
	if err != nil {
		return nil, fmt.Errorf("proxy: --approval-key: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("proxy: --approval-key %s is not a regular file; want a key file such as the output of: head -c 32 /dev/urandom | base64", file)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("proxy: --approval-key: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxApprovalKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("proxy: --approval-key: %w", err)
	}
	if len(b) > maxApprovalKeyFile {
		return nil, fmt.Errorf("proxy: --approval-key %s is larger than %d bytes; want a key file such as the output of: head -c 32 /dev/urandom | base64", file, maxApprovalKeyFile)
	}
	key := bytes.TrimSpace(b)
	if len(key) < mcpguard.MinApprovalKeyBytes {
		return nil, fmt.Errorf("proxy: --approval-key %s holds %d bytes; want at least %d, such as the output of: head -c 32 /dev/urandom | base64", file, len(key), mcpguard.MinApprovalKeyBytes)
	}
	return key, nil
}

// runProxy runs the proxy subcommand until ctx is done.
func runProxy(ctx context.Context, args []string, getenv func(string) string, stdout, logOut io.Writer) error {
	o, err := parseProxyFlags(args, stdout)
	if err != nil {
		return err
	}
	gopts, err := o.guardOptions()
	if err != nil {
		return err
	}
	creds, err := o.upstreamCredentials(getenv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(logOut, nil))
	if problems := startProblems(o, gopts); len(problems) > 0 {
		if o.strict {
			var msgs []string
			for _, p := range problems {
				msgs = append(msgs, "proxy: "+p.msg+" (--strict)")
			}
			return errors.New(strings.Join(msgs, "\n"))
		}
		for _, p := range problems {
			reportProblem(logger, false, p)
		}
	}
	var file *auth.File
	var named []string
	if o.principals != "" {
		if file, err = auth.Load(o.principals); err != nil {
			return fmt.Errorf("--principals %w", err)
		}
		for name := range file.Principals {
			named = append(named, name)
		}
	}
	tp, err := startTracing(ctx, getenv, logger)
	if err != nil {
		return err
	}
	var tracer trace.Tracer
	if tp != nil {
		tracer = tp.Tracer(proxyTracerName)
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(fctx); err != nil {
				logger.Warn("traces could not all be flushed", "error", err.Error())
			}
		}()
	}
	var reg *prometheus.Registry
	if o.metricsAddr != "" {
		reg = newMetricsRegistry()
	}
	var registerer prometheus.Registerer
	if reg != nil {
		registerer = reg
	}
	observer, err := newProxyObserver(logger, tracer, registerer, named)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	checker := newListChecker(logger, o.strict, gopts)
	// The checker reports an inputSchema the guard cannot use once per
	// list, as schema_unusable (an error under --strict); the guard of
	// each scope would warn again, in its own words.
	gopts.Logger = slog.New(slog.DiscardHandler)
	policies := newPrincipalPolicies(file)
	var scopeState func(principal, run string, g *mcpguard.Options) (func(), error)
	if o.store != "" {
		shared, err := sharedstate.Open(ctx, o.store, max(time.Hour, o.ttl))
		if err != nil {
			return err
		}
		defer shared.Close()
		logger.Info("shared store", "store", shared.String())
		policies.shared = shared
		scopeState = func(principal, run string, g *mcpguard.Options) (func(), error) {
			sc, err := shared.Scope(principal, run)
			if err != nil {
				return nil, err
			}
			g.LedgerStore, g.Results, g.Claims = sc.Ledger, sc.Results, sc.Claims
			return sc.Close, nil
		}
	}
	dial, upstreamURL := mcpproxy.HTTPDialer(o.upstream, nil), o.upstream
	if len(o.command) > 0 {
		dial, upstreamURL = mcpproxy.CommandDialer(o.command[0], o.command[1:]...), ""
	}
	p := mcpproxy.New(mcpproxy.Options{Dial: dial, UpstreamURL: upstreamURL, Guard: gopts, Logger: logger,
		IdleTimeout: o.idle, TrustHost: o.trustHost, MaxScopes: o.maxScopes, ScopeIdleTimeout: o.scopeIdle,
		MaxSessions: o.maxSessions, MaxSessionsPerClient: o.perClient, MaxProcesses: o.maxProcesses,
		InitTimeout: o.initTimeout, BodyTimeout: o.bodyTimeout, MaxBatch: o.maxBatch, AllowOrigins: o.allowOrigins,
		MaxCallsInFlightPerSession: o.calls.perSession, MaxCallsInFlightPerClient: o.calls.perClient, MaxCallsInFlight: o.calls.total,
		CallTimeout: o.calls.timeout, MaxResultBytes: o.calls.maxResult, Credentials: creds, OnToolsList: checker.sawList,
		OnCall: observer.onCall, CallMeta: observer.callMeta, ScopeGuard: policies.scopeGuard, ScopeState: scopeState, ToolAllowed: policies.toolAllowed()})
	defer p.Close()
	if reg != nil {
		if err := registerProxyGauges(reg, p); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		metrics, err := startMetrics(o.metricsAddr, reg, logger)
		if err != nil {
			return err
		}
		defer metrics.stop()
	}
	var guarded http.Handler = p
	var authn *auth.Authenticator
	if file != nil {
		if authn, err = auth.New(ctx, file, logger); err != nil {
			return fmt.Errorf("--principals %s: %w", o.principals, err)
		}
		defer authn.Close()
	}
	mux := http.NewServeMux()
	if authn != nil {
		guarded = authn.Wrap(p)
		mux.Handle(auth.MetadataPath, authn.Wrap(p))
		mux.Handle(auth.MetadataPath+"/", authn.Wrap(p))
	}
	mux.Handle("/mcp", guarded)
	// What preflight verify needs besides a receipt: the public keys, for
	// anyone, and the catalog of the caller's run, for whoever may call
	// tools/list (it shows the same schemas, and the prices).
	var catalog http.Handler = http.HandlerFunc(p.ServeCatalog)
	if authn != nil {
		catalog = authn.Wrap(catalog)
	}
	mux.HandleFunc(receipt.KeysPath, p.ServeReceiptKeys)
	mux.Handle(mcpproxy.CatalogPath, catalog)
	health := proxyHealth(p.Ready)
	mux.Handle("/health", health)
	mux.Handle("/ready", health)

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	ops := defaultOps()
	srv := &http.Server{
		Handler:           withRequestID(rejectAmbiguousFramingRPC(mux)),
		ReadHeaderTimeout: ops.readHeaderTimeout,
		IdleTimeout:       ops.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ConnContext:       connContext,
	}
	upstream := o.upstream
	if upstream == "" {
		upstream = "stdio: " + o.command[0]
	}
	logger.Info("listening", "addr", ln.Addr().String(), "mode", "proxy", "upstream", upstream)
	// net/http drops a request that arrives once Shutdown has begun, with
	// no answer: the proxy stops accepting and drains first, for at most
	// half the grace period, so that such requests get 503.
	sl := &stoppableListener{Listener: framedListener{ln}}
	drain := func() { drainProxy(sl, p, ops.shutdownTimeout/2, logger) }
	return serve(ctx, srv, sl, logger, ops.shutdownTimeout, drain, nil)
}

func jsonNumber(s string) json.Number { return json.Number(s) }

// withRequestID gives every request to the proxy's listener an id, on its
// answer and in its header, where the proxy's handler takes it up (the
// client's own when it is a sane token): /health and the framing refusal
// carry one too.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid := reqid.New(r.Header.Get(reqid.Header))
		r.Header.Set(reqid.Header, rid)
		w.Header().Set(reqid.Header, rid)
		next.ServeHTTP(w, r)
	})
}

// checkStoreURL checks the form of a --store value before anything is
// dialed. Its error never repeats the value, which may hold a password.
func checkStoreURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("--store is not a URL with a host; %s", sharedstate.Want)
	}
	switch u.Scheme {
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "postgres", "postgresql":
		return nil
	}
	return fmt.Errorf("--store has the scheme %q; %s", u.Scheme, sharedstate.Want)
}

// loopbackListen reports whether the listen address addr is on a loopback
// interface only: localhost or a loopback IP address (an empty host, all
// interfaces, is not).
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

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
