package server

import (
	"errors"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// Buckets of the latency histograms, in seconds. A free request takes well
// under a millisecond; a paid one waits for the facilitator, which may take
// seconds (verify and settle are bounded by their timeouts).
var (
	requestBuckets     = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	facilitatorBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30}
)

// metrics are the service's Prometheus collectors. Every label has a bounded
// set of values: routes are the registered paths (or "unmatched"), codes are
// statuses the server writes, decisions, reasons and outcomes are the
// library's and the paywall's own constants.
type metrics struct {
	requests    *prometheus.CounterVec   // route, code
	duration    *prometheus.HistogramVec // route
	inFlight    prometheus.Gauge
	tooLarge    *prometheus.CounterVec   // route
	decisions   *prometheus.CounterVec   // decision, reason
	checks      *prometheus.CounterVec   // valid, economics
	payments    *prometheus.CounterVec   // outcome
	facilitator *prometheus.HistogramVec // endpoint, result
	toolCalls   *prometheus.CounterVec   // tool, result

	// The children of requests and duration by route, resolved once: a
	// request then costs no label hashing and no status string.
	routesMu sync.Mutex
	routes   atomic.Pointer[map[string]*routeMetrics] // replaced, never written in place
}

// routeMetrics are one route's request counters, by status, and its
// latency histogram.
type routeMetrics struct {
	duration prometheus.Observer
	codes    atomic.Pointer[map[int]prometheus.Counter] // replaced, never written in place
}

// unmatchedRoute labels requests to a path the service does not serve.
const unmatchedRoute = "unmatched"

// newMetrics creates the collectors and registers them with reg. A
// collector that reg already holds (New called twice with one registry) is
// shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "preflight_http_requests_total",
			Help: "HTTP requests answered, by route (the registered path, or unmatched) and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "preflight_http_request_duration_seconds",
			Help:    "Time from the start of the handler to its end, by route; payment time included.",
			Buckets: requestBuckets,
		}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "preflight_http_requests_in_flight",
			Help: "HTTP requests being handled now.",
		}),
		tooLarge: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "preflight_http_request_bodies_too_large_total",
			Help: "Requests refused with 413 because the body is over 65536 bytes, by route.",
		}, []string{"route"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "preflight_decisions_total",
			Help: "Decisions returned by POST /v0.2/preflight/tool-call (status 200), by decision and first reason code.",
		}, []string{"decision", "reason"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "preflight_checks_total",
			Help: "Checks returned by POST /check-request (status 200), by validity and economics decision (none without economics).",
		}, []string{"valid", "economics"}),
		payments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "preflight_payment_outcomes_total",
			Help: "x402 payment steps on the paid route, by outcome.",
		}, []string{"outcome"}),
		facilitator: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "preflight_facilitator_request_duration_seconds",
			Help:    "Duration of calls to the x402 facilitator, by endpoint and result (answered: an HTTP answer came back; error: none did).",
			Buckets: facilitatorBuckets,
		}, []string{"endpoint", "result"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "preflight_mcp_tool_calls_total",
			Help: "MCP tools/call requests, by tool and result (ok, tool_error: an isError result, protocol_error: a JSON-RPC error).",
		}, []string{"tool", "result"}),
	}
	var err error
	register := func(c prometheus.Collector) prometheus.Collector {
		if rerr := reg.Register(c); rerr != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(rerr, &are) {
				return are.ExistingCollector
			}
			err = errors.Join(err, rerr)
		}
		return c
	}
	m.requests = register(m.requests).(*prometheus.CounterVec)
	m.duration = register(m.duration).(*prometheus.HistogramVec)
	m.inFlight = register(m.inFlight).(prometheus.Gauge)
	m.tooLarge = register(m.tooLarge).(*prometheus.CounterVec)
	m.decisions = register(m.decisions).(*prometheus.CounterVec)
	m.checks = register(m.checks).(*prometheus.CounterVec)
	m.payments = register(m.payments).(*prometheus.CounterVec)
	m.facilitator = register(m.facilitator).(*prometheus.HistogramVec)
	m.toolCalls = register(m.toolCalls).(*prometheus.CounterVec)
	return m, err
}

// registerSessions registers a gauge of the MCP sessions srv holds open.
func registerSessions(reg prometheus.Registerer, srv *mcp.Server) error {
	err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "preflight_mcp_sessions_open",
		Help: "MCP sessions open now. The endpoint is stateless: each POST /mcp opens a session that closes with its answer.",
	}, func() float64 {
		n := 0
		for range srv.Sessions() {
			n++
		}
		return float64(n)
	}))
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		return nil // the first handler's server keeps being counted
	}
	return err
}

// observeRequest records one finished request.
func (m *metrics) observeRequest(route string, status int, d time.Duration, ob *observation) {
	if route == "" {
		route = unmatchedRoute
	}
	rm := m.route(route)
	rm.counter(m, route, status).Inc()
	rm.duration.Observe(d.Seconds())
	if status == 413 {
		m.tooLarge.WithLabelValues(route).Inc()
	}
	if status != 200 {
		return
	}
	if ob.decision != "" {
		m.decisions.WithLabelValues(ob.decision, ob.reason).Inc()
	}
	if ob.checked {
		econ := ob.economics
		if econ == "" {
			econ = "none"
		}
		m.checks.WithLabelValues(strconv.FormatBool(ob.valid), econ).Inc()
	}
}

// route returns the resolved children of route, resolving them on its
// first request. A series appears in the exposition only once a request
// has used it, as with WithLabelValues on every request.
func (m *metrics) route(route string) *routeMetrics {
	if all := m.routes.Load(); all != nil {
		if rm := (*all)[route]; rm != nil {
			return rm
		}
	}
	m.routesMu.Lock()
	defer m.routesMu.Unlock()
	old := m.routes.Load()
	if old != nil && (*old)[route] != nil {
		return (*old)[route]
	}
	next := map[string]*routeMetrics{}
	if old != nil {
		maps.Copy(next, *old)
	}
	rm := &routeMetrics{duration: m.duration.WithLabelValues(route)}
	next[route] = rm
	m.routes.Store(&next)
	return rm
}

// counter returns the requests counter of status on the route, resolving
// it on its first use (under m.routesMu).
func (rm *routeMetrics) counter(m *metrics, route string, status int) prometheus.Counter {
	if codes := rm.codes.Load(); codes != nil {
		if c := (*codes)[status]; c != nil {
			return c
		}
	}
	m.routesMu.Lock()
	defer m.routesMu.Unlock()
	old := rm.codes.Load()
	if old != nil && (*old)[status] != nil {
		return (*old)[status]
	}
	next := map[int]prometheus.Counter{}
	if old != nil {
		maps.Copy(next, *old)
	}
	c := m.requests.WithLabelValues(route, strconv.Itoa(status))
	next[status] = c
	rm.codes.Store(&next)
	return c
}
