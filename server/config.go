package server

import (
	"log/slog"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Config configures the handler returned by [New]. The zero value serves
// every route, with the tool-call route unpaid, and derives its own address
// from each request.
type Config struct {
	// BaseURL is the public base URL of the API, such as
	// "https://api.example.com", without a trailing slash (one is removed).
	// It appears in the served documents ({base_url}), in the OpenAPI
	// document's servers list and in the x402 resource URL. Empty means
	// derive it from each request: "http://" (or "https://" on a TLS
	// connection) followed by the request's Host header. Set it in
	// production: a derived address repeats whatever Host a client sent.
	BaseURL string

	// SiteURL is the public base URL of the informational site ({site_url}
	// in the served documents). Empty means the same as the base URL.
	SiteURL string

	// Payment, when non-nil, makes POST /v0.2/preflight/tool-call paid with
	// x402. Nil means the route is unpaid. If the payment configuration is
	// invalid (see [Payment.Validate]), the route answers 503
	// payment_unavailable to every well-formed request; it never falls back
	// to serving unpaid.
	Payment *Payment

	// MCPTrustProxyHost tells the /mcp transport to accept a Host header
	// that is not a loopback name on a loopback connection, as happens
	// behind a reverse proxy. False keeps the transport's protection against
	// DNS rebinding on.
	MCPTrustProxyHost bool

	// Catalog is the set of operations the tool-call route and the
	// preflight_tool_call MCP tool decide. Nil means
	// preflight.DefaultCatalog() and leaves every document as written;
	// otherwise /openapi.json, the MCP tool description, /docs and the
	// llms.txt files list the catalog's operations.
	Catalog *preflight.Catalog

	// Logger receives the handler's own error reports (a misconfigured
	// paywall, a recovered panic) and, unless Payment.Logger is set, the
	// paywall's lines. It never receives request bodies or header values.
	// Lines logged for a request carry its request_id (and trace_id and
	// span_id when traced). Nil means discard.
	Logger *slog.Logger

	// Metrics, when non-nil, receives the service's Prometheus collectors
	// (requests, latency, decisions, checks, payment outcomes, facilitator
	// latency, MCP sessions and tool calls). Nil means no metrics. The
	// handler does not serve them: expose the registry where you choose.
	Metrics prometheus.Registerer

	// Drain, when non-nil, lets the program serving the handler stop the
	// paid route from taking new payments once shutdown begins, and learn
	// which payments are still settling (see [Drain]). Nil means the paid
	// route takes payments until the server stops.
	Drain *Drain

	// TracerProvider, when non-nil, gives every request a server span (an
	// incoming W3C traceparent is its parent), facilitator calls client
	// spans whose traceparent is sent on, and MCP tool calls spans of their
	// own. Nil means no tracing. Every response carries X-Request-Id either
	// way (a sane incoming one is kept).
	TracerProvider trace.TracerProvider

	// Receipts, when non-nil, signs every answer: each 200 of
	// POST /check-request and POST /v0.2/preflight/tool-call (a paid one
	// only when it is settled) carries the answer's receipt in the
	// Preflight-Receipt header, and each result of the MCP tools that is not
	// an error carries it in _meta under "io.agentpreflight/receipt". A
	// caller chains its receipts by sending the previous one's hash in the
	// Preflight-Receipt-Prev header (MCP: params._meta
	// "io.agentpreflight/receipt-prev"). GET
	// /.well-known/preflight-receipt-keys publishes the public keys. Nil
	// means no receipts (and a 404 there). See package receipt.
	Receipts *receipt.Signer
}
