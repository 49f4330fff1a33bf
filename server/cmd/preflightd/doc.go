// Command preflightd runs the preflight reference server, or, as
// "preflightd proxy", a guarding proxy in front of an MCP server.
//
//	preflightd [flags]
//	preflightd proxy --listen ADDR --upstream URL [flags]
//	preflightd proxy --listen ADDR [flags] -- COMMAND [ARG...]
//
// The server serves every route of package server on one address: the HTTP
// API, /mcp, /docs and /openapi.json. What each route accepts and answers
// is in the guide the server renders at /docs (server/site/index.md in the
// repository). This page covers the program: its flags, its logs, its
// metrics and traces, and how it starts and stops.
//
// # Flags
//
// Every flag of the server has an environment fallback, and a flag on the
// command line wins. A variable set to the empty string counts as unset
// (PREFLIGHT_ADDR= keeps the default address); an empty flag is taken as
// given (--addr "" stops the program at start). -h or --help prints the
// flags and exits 0; a flag the program does not know exits 2.
//
//	--addr                         PREFLIGHT_ADDR
//	    Listen address; default 127.0.0.1:8080 (loopback). Port 0 picks
//	    a free one. Empty is refused.
//	--base-url                     PREFLIGHT_BASE_URL
//	    Public API base URL: {base_url} in the documents, the servers list of
//	    /openapi.json and the x402 resource URL. Default: derived from each
//	    request's Host. Set it in production.
//	--site-url                     PREFLIGHT_SITE_URL
//	    Public site base URL ({site_url} in the documents). Default: the base URL.
//	--pay-to                       PREFLIGHT_PAY_TO
//	    x402 recipient address, 0x and 40 hex digits; mixed case must be a
//	    valid EIP-55 checksum. Empty (the default) serves the tool-call route
//	    unpaid.
//	--network                      PREFLIGHT_NETWORK
//	    eip155:8453 (Base, the default) or eip155:84532 (Base Sepolia).
//	--facilitator-url              PREFLIGHT_FACILITATOR_URL
//	    x402 facilitator base URL (its /verify and /settle); required with --pay-to.
//	--max-timeout-seconds          PREFLIGHT_MAX_TIMEOUT_SECONDS
//	    Payment authorization window offered to clients: 0 (the default,
//	    meaning 60) or 35..3600. It must cover the facilitator's verify and
//	    settle timeouts with a margin.
//	--mcp-trust-proxy-host         PREFLIGHT_MCP_TRUST_PROXY_HOST
//	    Accept a non-loopback Host header on /mcp over a loopback connection.
//	    Default false.
//	--operations                   PREFLIGHT_OPERATIONS
//	    Catalog file of the operations to decide (format in the guide; its
//	    JSON Schema is served at /schemas/operations.json). A regular file of
//	    at most 4 MiB; a larger file, a FIFO, a device or a directory stops
//	    the program at start. The built-in search/web_search and browse/fetch
//	    stay unless the file says "builtins": false. Default: the built-ins
//	    only. /openapi.json, the preflight_tool_call description, /docs and
//	    /llms.txt list the operations configured.
//	--signing-key                  PREFLIGHT_SIGNING_KEY
//	    Receipt signing key file: PEM whose first block is an Ed25519
//	    PRIVATE KEY (PKCS#8; openssl genpkey -algorithm ed25519 -out
//	    key.pem), a regular file of at most 64 KiB. Every 200 of the check
//	    and tool-call routes (a paid one once settled) then carries a
//	    Preflight-Receipt header, and every MCP result that is not an error
//	    a receipt in _meta; /.well-known/preflight-receipt-keys publishes
//	    the public keys. To rotate, put the new key first and keep the old
//	    ones after it (PRIVATE KEY or PUBLIC KEY blocks): they stay
//	    published, so their receipts still verify. The "listening" log line
//	    names the signing key's id in receipt_kid. Default: no receipts.
//	--metrics-addr                 PREFLIGHT_METRICS_ADDR
//	    Serve Prometheus metrics at http://ADDRESS/metrics on a listener of
//	    their own, such as 127.0.0.1:9464; not --addr itself (unless both use
//	    port 0). Default: no metrics.
//	--read-header-timeout          PREFLIGHT_READ_HEADER_TIMEOUT
//	    Longest wait for a request's headers; default 5s.
//	--read-timeout                 PREFLIGHT_READ_TIMEOUT
//	    Longest wait for a whole request, body included; default 30s, at
//	    least the header timeout.
//	--write-timeout                PREFLIGHT_WRITE_TIMEOUT
//	    Longest time to answer once the headers are read; default 60s. On a
//	    paid server at least read + verify + settle timeouts + 4s: the body,
//	    up to 2s waiting for an evaluation slot, the facilitator and the
//	    answer all count against it. On a connection busy with requests the
//	    deadline is moved at most every hundredth of the timeout, so an
//	    answer's may fall up to 1% early (0.6s of 60s), never late.
//	--idle-timeout                 PREFLIGHT_IDLE_TIMEOUT
//	    How long an idle keep-alive connection stays open; default 120s.
//	--max-connections              PREFLIGHT_MAX_CONNECTIONS
//	    Most API connections open at once, at least 16. 0 (the default) means
//	    the file-descriptor limit (ulimit -n) less a reserve of 104 (plus
//	    --max-facilitator-calls on a paid server) for the process's own files
//	    and outbound sockets, at most 4096; a value that leaves less than the
//	    reserve stops the program at start. Past 3/4 of it, connections
//	    waiting for a request get --idle-timeout-under-pressure. At the bound
//	    the connection waiting longest (at least 1s) is closed to make room,
//	    or the new one gets a raw 503 server_busy with Retry-After: 1 and is
//	    closed. A request being read or answered keeps its connection. The
//	    "listening" log line carries the bound in max_connections.
//	--idle-timeout-under-pressure  PREFLIGHT_IDLE_TIMEOUT_UNDER_PRESSURE
//	    The idle timeout once more than 3/4 of --max-connections are open;
//	    default 5s, at most --idle-timeout.
//	--max-facilitator-calls        PREFLIGHT_MAX_FACILITATOR_CALLS
//	    Most payments with the facilitator at once, from /verify through
//	    /settle; default 32, 1..4096, paid servers only. A payment beyond it is
//	    answered 503 server_busy with Retry-After: 1 before /verify, so junk
//	    payments cannot spend the facilitator's quota faster than this.
//	--verify-timeout               PREFLIGHT_VERIFY_TIMEOUT
//	    Longest wait for the facilitator's /verify; default 10s, at most 20s.
//	--settle-timeout               PREFLIGHT_SETTLE_TIMEOUT
//	    Longest wait for the facilitator's /settle; default 15s, at most 20s.
//	--shutdown-timeout             PREFLIGHT_SHUTDOWN_TIMEOUT
//	    Grace for requests in flight after SIGTERM or SIGINT; default 30s. On
//	    a paid server at least verify + settle timeouts + 2s.
//
// Durations are Go durations (500ms, 30s, 2m), above 0 and at most 1h. A
// value out of range, or a combination that could cut off a paid answer
// after its payment settled, stops the program at start with a message
// naming the flag and what it needs. So does an invalid payment
// configuration (or payment flags without --pay-to), and an invalid
// catalog file, with every problem on its own line with its JSON Pointer
// (the guide describes the three stages the file is checked in).
//
// A paid server on Base Sepolia:
//
//	preflightd --base-url https://api.example.com --pay-to "$PAY_TO" --network eip155:84532 --facilitator-url https://facilitator.example.com
//
// Behind a reverse proxy on the same machine, /mcp answers 403 when the
// proxy forwards a public Host (such as api.example.com) to 127.0.0.1: a
// loopback connection must carry a loopback Host, against DNS rebinding,
// while the other routes work. Either have the proxy send a loopback Host
// for /mcp (nginx: proxy_set_header Host 127.0.0.1:8080) and set
// --base-url, or start with --mcp-trust-proxy-host, which turns the check
// off. That lets a web page in a local browser reach /mcp; it exposes only
// two free, read-only, stateless tools, but the check is the safer
// default. Requests from non-loopback connections are not checked.
//
// # Logs, start and shutdown
//
// When standard error is a terminal, a few plain lines first say where
// /docs, /health and /mcp are. From the line with "msg":"listening" on
// (its "addr" field is the address actually bound), every line is JSON
// (log/slog), the last one included. Each request gets one line: method,
// path, status, size, duration and request id; never bodies, query strings
// or header values. The request id is the one the response carries in
// X-Request-Id; payment lines ("x402 settled", "x402 settle failed,
// outcome unknown", ...) carry it too, with trace_id and span_id when
// traced, so an unknown settlement outcome leads to its request.
//
// The access log is on and cannot be turned off: an operator expects one,
// and it costs next to nothing. Request lines are collected in memory and
// written together at most 100 ms after the first of them, or once 64 KiB
// are pending, or before any other line, or at exit: no system call per
// request (on one core, a write per request and slog's encoding cost about
// as much as a small request's own evaluation). Every other line is
// written at once. A crash loses at most the last 100 ms of request lines.
//
// Unless GOGC or GOMEMLIMIT is set, preflightd keeps a 16 MiB ballast, never
// written and so not resident, that lets the garbage collector run about
// eight times less often than its 4 MiB minimum goal would; the price is
// up to 16 MiB more garbage held between collections. Setting either
// variable leaves the collector as configured.
//
// On SIGINT or SIGTERM the server stops accepting connections and lets
// requests in flight finish, up to --shutdown-timeout: a paid request in
// settlement completes, settles and gets its decision; then buffered spans
// are flushed. A request carrying a payment not yet sent to the facilitator
// when shutdown begins (its body still arriving, say) gets 503 server_busy
// with Retry-After: 1, nothing verified or charged, so every settlement
// that starts can finish within the grace. Should the process still exit
// with a settlement under way, it first logs "exiting with a payment in
// settlement, outcome unknown" with the request id.
//
// A request that is not valid HTTP/1.1 never reaches a handler: net/http
// answers it in plain text with its own status, logs nothing and closes
// the connection (the guide lists the cases); a request with both
// Content-Length and Transfer-Encoding is answered 400 and its connection
// closed.
//
// The server keeps no state, so replicas behind any load balancer need no
// coordination.
//
// # Metrics
//
// With --metrics-addr, Prometheus metrics are served at /metrics (text or
// OpenMetrics), with the Go runtime (go_*) and process (process_*)
// metrics. They have a listener of their own because the API is public
// and, on a paid server, the counters are business data: they can stay on
// loopback or a private network while the API faces the internet, and the
// API keeps exactly the routes its OpenAPI document lists. Every label
// has a bounded set of values; a path that is no route counts as
// route="unmatched".
//
//	preflight_http_requests_total                   counter    route, code
//	preflight_http_request_duration_seconds         histogram  route (handler time, payment included)
//	preflight_http_requests_in_flight               gauge
//	preflight_http_request_bodies_too_large_total   counter    route (bodies refused with 413)
//	preflight_decisions_total                       counter    decision, reason (the first reason code)
//	preflight_checks_total                          counter    valid, economics (proceed, abort, none)
//	preflight_payment_outcomes_total                counter    outcome
//	preflight_facilitator_request_duration_seconds  histogram  endpoint (verify, settle), result (answered, error)
//	preflight_mcp_sessions_open                     gauge      (a session lives for one POST: /mcp is stateless)
//	preflight_mcp_tool_calls_total                  counter    tool, result (ok, tool_error, protocol_error)
//
// The payment outcomes are challenge_sent, malformed, verified,
// verify_failed, facilitator_error, client_gone, settled, settle_failed and
// outcome_unknown. A paying request counts verified and then one
// settlement outcome; client_gone is a client that hung up during
// verification (nothing charged), kept apart from facilitator_error. Worth
// alerting on: any increase of outcome_unknown (look its request id up in
// the log), a rising share of facilitator_error, and the p99 facilitator
// duration near the verify or settle timeout.
//
// # Traces
//
// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set or OTEL_TRACES_EXPORTER=otlp.
// OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turns it off; another
// exporter stops the program at start. Spans go over OTLP/HTTP (no gRPC
// exporter). Every other OTEL_* variable (headers, timeout, compression,
// OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json, the sampler,
// OTEL_SERVICE_NAME, default preflightd, and OTEL_RESOURCE_ATTRIBUTES) is
// read by the OpenTelemetry SDK itself, as it documents them. A value the
// SDK cannot use is ignored, and the SDK says so in a JSON line with
// "component":"opentelemetry" (its message and error, never a header
// value); failed exports are logged the same way and never affect answers.
// To a local OTLP/HTTP receiver (an OpenTelemetry Collector, Jaeger, Tempo):
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=preflight-eu1 preflightd --metrics-addr 127.0.0.1:9464
//
// Each request is a server span named "METHOD route" with the HTTP
// semantic conventions (http.request.method, http.route, url.path,
// http.response.status_code, ...), continuing an incoming W3C traceparent,
// with preflight.decision, preflight.reason_code, preflight.fingerprint,
// preflight.check.valid, preflight.request_hash and
// preflight.payment.outcome where they apply, and the payment steps as
// events. Facilitator calls are client spans "x402 verify" and "x402
// settle" and send their traceparent on. MCP tool calls are spans
// "execute_tool check_request" and "execute_tool preflight_tool_call"
// (gen_ai.operation.name, gen_ai.tool.name) inside the "POST /mcp" span.
//
// # The guarding MCP proxy
//
// "preflightd proxy" serves MCP Streamable HTTP at /mcp in front of an MCP
// server: one at URL over Streamable HTTP, or COMMAND over stdio, started
// once per session. Every message is forwarded as it came except
// tools/call, which preflight decides first, with one ledger, budget, call
// limit and set of saved results per scope: the caller's principal (one
// anonymous principal without authentication) and run. The run is named
// by the run handle a request carries, params._meta
// "io.agentpreflight/run" or the Preflight-Run header; without one, a
// session's requests are the session's own run and stateless requests the
// principal's default run. A session and stateless requests naming the
// same run share its scope. A named run ends after --scope-idle without a
// request, a session's own run with its session. A call repeated within
// its tool's idempotency window (--idempotency-window, or the tool's
// idempotencySeconds in --operations) joins the first while it runs and,
// for a tool that is not read-only, gets its result once it succeeded,
// or, when its outcome is unknown (the upstream connection ended), a
// withheld result saying so; an MRTR retry carrying an input_required
// result's requestState continues its call, decided and charged once.
// Both protocol generations are served: the
// initialize handshake with sessions, and the stateless 2026-07-28
// revision, whose requests go to an --upstream URL one POST each after
// their Mcp-Method and Mcp-Name headers are checked against the body
// (-32020 on a mismatch); a stateless tools/call goes on when its client's
// stream breaks, so that the client's re-issued call finds it. In
// front of an HTTP upstream that speaks only initialize, a stateless client
// gets UnsupportedProtocolVersion (-32022) naming the initialize revisions
// and falls back to them. In front of a command, stateless requests share
// one long-lived process, started at the first of them and again after it
// exits, apart from the sessions' own (the bridge: ids and progress tokens
// remapped per request; a command that answers server/discover with
// 2026-07-28 gets each request as it came, one that does not is
// initialized once and each request translated, without the sampling,
// elicitation and roots capabilities, whose requests the bridge refuses;
// the bridge checks the HTTP headers as the upstream would over HTTP). What a client sees (withheld, reused and
// coalesced calls, refusals and their codes) is in the guide's "MCP
// guarding proxy" section. Its flags, which have no environment fallbacks
// ("preflightd proxy -h" prints them):
//
//	--listen ADDR                         default 127.0.0.1:8090; port 0 picks a free port
//	--upstream URL                        the upstream Streamable HTTP server (or a command after --)
//	--operations FILE                     catalog file whose operations may also carry priceUsd, ttlSeconds, retryCap, idempotencySeconds, approval
//	--approval-key FILE                   key (at least 32 bytes) sealing the requestState of calls awaiting approval; default random per process
//	--budget-usd DOLLARS                  each run's budget, a non-negative JSON number; empty: none
//	--max-calls N                         tool calls per run; 0 (default): no limit
//	--ttl DURATION                        reuse window of a read-only tool's result, whole seconds; default 5m, 0 disables
//	--idempotency-window DURATION         a repeated call gets the first's answer; whole seconds, at most 1h; default 5m, 0 off
//	--max-scopes N                        runs guarded at once (sessions' own runs included); default 2000
//	--scope-idle DURATION                 end a named or default run with no request for this long; default 30m, at most 24h
//	--session-idle DURATION               end a session with no request for this long; default 30m, 0 never
//	--session-init-timeout DURATION       end a session with no request after its initialize; default 30s
//	--max-sessions N                      sessions open at once; default 1000
//	--max-sessions-per-client N           sessions from one IP address (IPv6: its /64); default 100
//	--max-processes N                     upstream processes with a command upstream (the stateless bridge's too); default 32
//	--body-timeout DURATION               longest wait for a POST body; default 10s
//	--allow-origin ORIGIN                 browser origins served (repeat or comma-separate); default none
//	--max-batch N                         messages in one JSON-RPC batch; default 64
//	--max-calls-in-flight-per-session N   default 32
//	--max-calls-in-flight-per-client N    default 64
//	--max-calls-in-flight N               across sessions; default 256
//	--call-timeout DURATION               wait for the upstream's answer to a call; default 5m
//	--max-result-bytes N                  largest message read from the upstream; default 16777216 (16 MiB)
//	--trust-proxy-host                    accept any Host on a loopback listener (behind a reverse proxy)
//	--principals FILE                     who may call: API keys (SHA-256 digests) and JWTs (issuer, audience, JWKS)
//	--upstream-forward-authorization      send the client's Authorization header to the --upstream server
//	--upstream-header NAME=env:VAR        a header for the --upstream server from the environment, or
//	                  NAME=file:PATH      from a file (read again when it changes); repeat; never a value
//	--strict                              configuration problems are errors, not warnings
//	--metrics-addr ADDR                   serve Prometheus metrics at http://ADDR/metrics; default none
//	--signing-key FILE                    sign each decision (PEM Ed25519 key, as the server's): its result's _meta carries
//	                                      the receipt, the request decided and the decision, chained per run;
//	                                      GET /.well-known/preflight-receipt-keys serves the public keys and
//	                                      GET /.well-known/preflight-catalog the caller's run's catalog (a
//	                                      tool-spec file for preflight verify --operations)
//	--store URL                           state shared by replicas: redis://[USER:PASSWORD@]HOST[:PORT][/DB]
//	                                      (rediss:// for TLS), redis+cluster://[USER:PASSWORD@]HOST:PORT[?addr=HOST2:PORT2&...]
//	                                      (a Redis Cluster; rediss+cluster:// for TLS)
//	                                      or postgres://USER:PASSWORD@HOST[:PORT]/DB; default none
//
// Replicas. With --store, each run's ledger (money, calls, history), the
// results saved for reuse and the exactly-once claims of its calls live in
// Redis (agent/redisledger) or PostgreSQL (agent/pgledger and two tables
// of the proxy's, preflight_proxy_claims and preflight_proxy_results),
// under a name that is the SHA-256 digest of the principal and the run, so
// that several proxies behind one load balancer spend one budget per run
// and run each call once: a call re-issued to another replica while the
// first runs waits for it (until shortly before its --call-timeout, then
// the retryable JSON-RPC error -32010 "in flight in another process") and
// gets its result, and within the idempotency window any replica answers
// a repeat with it. A run that ends on one replica (--scope-idle) leaves
// the store alone: its money and history go on when it starts again
// there or elsewhere, and Redis drops an idle run's keys after 24 h. The
// store must keep what it acknowledged (Redis: appendonly yes,
// maxmemory-policy noeviction, CONFIG readable; PostgreSQL: fsync and
// synchronous_commit on); the proxy checks at start and refuses another.
// A principal's window budget (the principals file's budgetUsd with
// window) is kept there too, spent by its runs on every replica together;
// with --store its windows are the multiples of the window's length since
// the Unix epoch, which every replica agrees on (without, a window starts
// with its first reservation). A multi-round trip is shared as well: a
// call answered input_required is kept in the store (by a digest of its
// tool, arguments and requestState) while it awaits, so the client's
// retry continues it on whichever replica it reaches, decided and charged
// once. Not shared: a session (Mcp-Session-Id) lives on the replica that
// opened it. A bad --store value, or a server that does
// not answer, stops the start with an error naming --store; the URL is
// shown and logged without its password.
//
// Without --principals the proxy serves one anonymous principal and
// refuses to start on a listen address that is not loopback. With it,
// /mcp needs Authorization: Bearer with an API key of the file (stored as
// the hex SHA-256 of the key: printf %s "$KEY" | sha256sum) or a JWT of
// the file's issuer and audience signed by a key of its JWKS; anything
// else gets 401 with WWW-Authenticate (resource_metadata pointing at
// /.well-known/oauth-protected-resource/mcp when JWTs are configured). A
// session belongs to the principal that opened it. The file's format is
// in the guide. A principal's "policy" there sets its runs' budget
// (budgetUsdPerRun) and call limit (maxCallsPerRun) in place of the
// flags', a budget all its runs share over a window (budgetUsd with
// window, a Go duration), the tools it sees in tools/list and may call
// (tools; any other is answered as an unknown tool and never forwarded)
// and prices and TTLs of its own (operations: name, priceUsd,
// ttlSeconds). Every problem of the file, an unknown member included, is
// named by its JSON Pointer and stops the start.
//
// An upstream's 401 or 403 reaches the client with the same status and
// WWW-Authenticate and a JSON-RPC error (data.upstreamStatus), not 502:
// on initialize and on every request of the 2026-07-28 revision.
//
// Configuration problems are logged as warnings with a "problem"
// attribute (errors with --strict): budget_unbound at start (a
// --budget-usd no priceUsd of --operations can reach; --strict refuses
// to start), and when the upstream's tools/list is read tool_not_listed
// (a tool of --operations the upstream does not list) and
// schema_unusable (an upstream inputSchema the guard cannot check; its
// calls are checked as any object).
//
// The operator's view. The proxy's listener answers GET /health (200
// while the process runs) and GET /ready (503 with {"status":"draining"}
// once shutdown has begun), both JSON and never authenticated. Every
// answer carries X-Request-Id: the client's when it is 1 to 128 letters,
// digits or - _ . : + / =, else a random one. Every HTTP refusal, the
// go-sdk transport's included, is a JSON-RPC error body. Each tools/call,
// through either generation, gets one log line "mcp proxy: tools/call"
// with requestId, principal, run (default, or a digest of the run handle
// or session), tool, answer (ran, not_run, reused, coalesced, withheld,
// repeat, not_evaluated, refused, approval, error), verdict, reasonCodes, reservedUsd,
// settledUsd, upstream (ok, tool_error, rpc_error, failed; empty when
// not forwarded), upstreamStatus (the HTTP status of a stateless call's
// upstream answer), upstreamMs, durationMs, stateless and, for an error
// answer, error; schemaUnchecked when the tool's inputSchema could not be
// used (the reason), and outputIssues (how many) with outputIssue (the
// first) when a result's structuredContent did not match the tool's
// outputSchema (the result is passed on); approval (asked, approved,
// declined, invalid, expired, used, unavailable) for a call of a tool
// that needs a person's approval. Calls refused at a bound on calls in flight, before
// their run is known, get at most 20 lines a second; the next line that
// is written says how many were not (refusalsNotLogged). Metrics count
// every call.
//
// With --metrics-addr the proxy serves, beside the Go runtime's and the
// process's collectors: preflight_proxy_tool_calls_total{answer,verdict,
// reason} (verdict and first reason code "none" when there is none),
// preflight_proxy_principal_tool_calls_total{principal,answer},
// preflight_proxy_upstream_duration_seconds{result},
// preflight_proxy_spent_usd_total{principal} and
// preflight_proxy_reserved_usd_total{principal} (summed exactly), and the
// gauges preflight_proxy_sessions_open and preflight_proxy_scopes_open.
// A principal label is a name of the --principals file or "anonymous";
// every other principal (a JWT's subject the file does not list) is
// "other", so the series stay bounded by the configuration.
//
// The same OTEL_* variables as the server's turn on traces: each
// tools/call is a server span "execute_tool TOOL" (gen_ai.operation.name
// execute_tool, gen_ai.tool.name, mcp.method.name tools/call,
// preflight.principal, preflight.run, preflight.decision,
// preflight.reason_codes, preflight.reserved_usd, preflight.settled_usd,
// preflight.upstream) in the trace the client sent in params._meta
// traceparent/tracestate (else in its traceparent header), and the call
// goes upstream with the span's traceparent in params._meta.
//
// A bad value stops the proxy at start: --budget-usd is read by the
// guard's own rule (5, 0.50 or 1e3; not NaN, Inf, .5, 0x1p-2 or 1_000),
// --session-init-timeout and --body-timeout are above 0 and at most 1h,
// the call bounds are positive, --ttl is whole seconds, --max-scopes is
// positive, --scope-idle above 0, and --store a redis://, rediss://,
// redis+cluster://, rediss+cluster://, postgres:// or postgresql:// URL
// with a host.
package main
