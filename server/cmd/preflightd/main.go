// Command preflightd runs the preflight reference server.
//
// It serves every route of package server on one address, logs one JSON
// line per request (method, path, status, duration, request id; never
// bodies or header values) to standard error, and shuts down gracefully on
// SIGINT or SIGTERM, letting requests in flight finish; a payment not yet
// sent to the facilitator when shutdown begins is refused with 503
// server_busy and Retry-After, so every settlement that starts can finish.
// Open connections, and payments with the facilitator at once, are bounded
// (503 server_busy with Retry-After beyond); a request with both
// Content-Length and Transfer-Encoding is answered 400 and its connection
// closed. A request that is not valid HTTP/1.1 never reaches a handler:
// net/http answers it in plain text with its own status (400 for a
// malformed request line or header or a missing Host, 431 for headers over
// 32 KiB, 501 for an unknown Transfer-Encoding, 505 for another HTTP
// version), logs nothing and closes the connection.
//
// Every flag has an environment fallback; a flag on the command line wins,
// and a variable set to the empty string counts as unset. An empty --addr
// is refused.
// -h or --help prints them and exits 0; a bad flag exits 2.
//
//	--addr                  PREFLIGHT_ADDR                  listen address (default 127.0.0.1:8080; port 0 picks a free one)
//	--base-url              PREFLIGHT_BASE_URL              public API base URL (default: derived from each request's Host)
//	--site-url              PREFLIGHT_SITE_URL              public site base URL (default: the base URL)
//	--pay-to                PREFLIGHT_PAY_TO                x402 recipient address; empty serves the tool-call route unpaid
//	--network               PREFLIGHT_NETWORK               x402 network, eip155:8453 (default) or eip155:84532
//	--facilitator-url       PREFLIGHT_FACILITATOR_URL       x402 facilitator base URL (required with --pay-to)
//	--max-timeout-seconds   PREFLIGHT_MAX_TIMEOUT_SECONDS   x402 authorization window (default 60)
//	--mcp-trust-proxy-host  PREFLIGHT_MCP_TRUST_PROXY_HOST  accept a non-loopback Host on /mcp behind a reverse proxy
//	--operations            PREFLIGHT_OPERATIONS            catalog file of the operations to decide, at most 4 MiB (default: the built-in two)
//	--metrics-addr          PREFLIGHT_METRICS_ADDR          serve Prometheus metrics at /metrics on this address (default: none)
//	--read-header-timeout   PREFLIGHT_READ_HEADER_TIMEOUT   default 5s
//	--read-timeout          PREFLIGHT_READ_TIMEOUT          default 30s
//	--write-timeout         PREFLIGHT_WRITE_TIMEOUT         default 60s; paid: at least read + verify + settle + 4s
//	--idle-timeout          PREFLIGHT_IDLE_TIMEOUT          default 120s
//	--max-connections       PREFLIGHT_MAX_CONNECTIONS       default: ulimit -n less a reserve, at most 4096; beyond: 503 server_busy
//	--idle-timeout-under-pressure  PREFLIGHT_IDLE_TIMEOUT_UNDER_PRESSURE  idle timeout past 3/4 of --max-connections, default 5s
//	--max-facilitator-calls PREFLIGHT_MAX_FACILITATOR_CALLS default 32 payments with the facilitator at once; beyond: 503 server_busy
//	--verify-timeout        PREFLIGHT_VERIFY_TIMEOUT        facilitator /verify, default 10s, at most 20s
//	--settle-timeout        PREFLIGHT_SETTLE_TIMEOUT        facilitator /settle, default 15s, at most 20s
//	--shutdown-timeout      PREFLIGHT_SHUTDOWN_TIMEOUT      grace for requests in flight, default 30s; paid: at least verify + settle + 2s
//
// Traces are exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set or OTEL_TRACES_EXPORTER=otlp,
// unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none; another
// OTEL_TRACES_EXPORTER stops the program at start. The OpenTelemetry SDK
// reads the other standard OTEL_* variables itself; one it cannot use, it
// ignores with an "opentelemetry" line in the JSON log (its message and
// error, never the variable's value).
//
// An invalid payment configuration or catalog file stops the program at
// start with a message saying what is wrong (for a catalog file, every
// problem with its JSON Pointer). The line with "msg":"listening" carries the
// address actually bound in its "addr" field. When standard error is a
// terminal, a few plain lines before it say where /docs, /health and /mcp are.
//
// # The guarding MCP proxy
//
//	preflightd proxy --listen ADDR --upstream URL [flags]
//	preflightd proxy --listen ADDR [flags] -- COMMAND [ARG...]
//
// serves MCP Streamable HTTP at /mcp in front of an MCP server (Streamable
// HTTP at URL, or COMMAND over stdio, one process per session). Every
// message is forwarded unchanged except tools/call, which is decided by
// preflight first: each MCP session has its own ledger, budget
// (--budget-usd) and call limit (--max-calls); a read-only tool's result is
// reused within --ttl (default 5m) and identical calls in flight share one
// execution; a call that failed terminally is not retried. A call that is
// not run is answered with an isError tool result saying why and what to
// do instead. --operations FILE is a catalog file whose operations may
// also carry priceUsd, ttlSeconds and retryCap. A session with no request
// for --session-idle (default 30m) is ended, one with no request after its
// initialize after --session-init-timeout (default 30s). At most
// --max-sessions sessions (default 1000; 503 past it) are open, at most
// --max-sessions-per-client (default 100; 429) from one remote IP address,
// and with a command upstream at most --max-processes processes (default
// 32; 503). A POST body must arrive within --body-timeout (default 10s;
// 408) and be application/json (415); a request whose Origin header is not
// one of --allow-origin nor on a loopback host gets 403. --budget-usd follows the guard's rule (a
// non-negative JSON number) and a bad value stops the program at start. On
// shutdown the listener closes first, requests on open connections get 503
// with Retry-After, then the sessions end. Run "preflightd proxy -h" for
// every flag.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentpreflight/preflight/server/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.As(err, new(reportedError)) {
		os.Exit(1) // the reason is already in the JSON log
	}
	cli.Exit("preflightd", err)
}
