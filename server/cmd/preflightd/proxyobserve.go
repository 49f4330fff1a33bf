package main

import (
	"context"
	"errors"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/server/internal/identity"
	"github.com/agentpreflight/preflight/server/internal/mcpproxy"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The proxy's operator view: one log line, metrics and a span per
// tools/call, built from the records mcpproxy hands to Options.OnCall.

// proxyTracerName names the instrumentation scope of the proxy's spans.
const proxyTracerName = "github.com/agentpreflight/preflight/server/cmd/preflightd/proxy"

// otherPrincipal labels, in metrics, every principal the principals file
// does not name: a JWT's subjects are not a bounded set.
const otherPrincipal = "other"

// upstreamBuckets are the buckets of the upstream latency, in seconds: a
// tool takes from milliseconds (a lookup) to minutes (a build).
var upstreamBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// proxyObserver turns call records into log lines, metrics and spans.
type proxyObserver struct {
	log    *slog.Logger
	tracer trace.Tracer // nil without tracing
	prop   propagation.TextMapPropagator
	named  map[string]bool // the principals that are metric label values

	calls     *prometheus.CounterVec   // answer, verdict, reason
	upstream  *prometheus.HistogramVec // result
	principal *prometheus.CounterVec   // principal, answer
	spent     *prometheus.CounterVec   // principal: settled dollars
	reserved  *prometheus.CounterVec   // principal: reserved dollars

	mu    sync.Mutex
	spend map[string]*big.Rat // exact settled dollars by label, for the counter

	overload lineLimit // of the lines of calls refused at a bound
}

// lineLimit lets at most refusalLinesPerSecond lines through each second.
type lineLimit struct {
	mu      sync.Mutex
	second  int64
	n       int
	skipped int
}

// refusalLinesPerSecond bounds the log lines of calls refused at a bound.
const refusalLinesPerSecond = 20

// allow reports whether a line may be written now and, when it may, how
// many were not written since the last one.
func (l *lineLimit) allow(now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := now.Unix(); s != l.second {
		l.second, l.n = s, 0
	}
	if l.n >= refusalLinesPerSecond {
		l.skipped++
		return 0, false
	}
	l.n++
	skipped := l.skipped
	l.skipped = 0
	return skipped, true
}

// newProxyObserver returns the observer. reg nil means no metrics;
// principals are the names the principals file lists (every other
// principal is counted as "other"; the anonymous principal is always
// named).
func newProxyObserver(log *slog.Logger, tracer trace.Tracer, reg prometheus.Registerer, principals []string) (*proxyObserver, error) {
	o := &proxyObserver{log: log, tracer: tracer, prop: propagation.TraceContext{}, named: map[string]bool{identity.Anonymous: true},
		spend: map[string]*big.Rat{}}
	for _, p := range principals {
		o.named[p] = true
	}
	if reg == nil {
		return o, nil
	}
	o.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "preflight_proxy_tool_calls_total",
		Help: "tools/call requests the proxy answered, by how (ran, not_run, reused, coalesced, withheld, repeat, not_evaluated, refused, approval, error), preflight's verdict (none when undecided) and first reason code (none without one).",
	}, []string{"answer", "verdict", "reason"})
	o.upstream = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "preflight_proxy_upstream_duration_seconds",
		Help:    "Time the upstream took to answer a forwarded tools/call, by result (ok, tool_error, rpc_error, failed).",
		Buckets: upstreamBuckets,
	}, []string{"result"})
	o.principal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "preflight_proxy_principal_tool_calls_total",
		Help: "tools/call requests by principal (those the principals file names, anonymous, or other) and how they were answered.",
	}, []string{"principal", "answer"})
	o.spent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "preflight_proxy_spent_usd_total",
		Help: "Dollars settled for the calls that ran, by principal (those the principals file names, anonymous, or other).",
	}, []string{"principal"})
	o.reserved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "preflight_proxy_reserved_usd_total",
		Help: "Dollars reserved by the calls that ran, by principal (those the principals file names, anonymous, or other).",
	}, []string{"principal"})
	for _, c := range []prometheus.Collector{o.calls, o.upstream, o.principal, o.spent, o.reserved} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// registerProxyGauges registers the gauges of p: sessions and scopes open.
func registerProxyGauges(reg prometheus.Registerer, p *mcpproxy.Proxy) error {
	return errors.Join(
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "preflight_proxy_sessions_open",
			Help: "MCP sessions (of the initialize handshake) open now.",
		}, func() float64 { return float64(p.Sessions()) })),
		reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "preflight_proxy_scopes_open",
			Help: "Scopes (a principal's runs, each with its ledger, budget and saved results) guarded now.",
		}, func() float64 { return float64(p.Scopes()) })),
	)
}

// label returns the metric label of principal.
func (o *proxyObserver) label(principal string) string {
	if o.named[principal] {
		return principal
	}
	return otherPrincipal
}

// onCall is mcpproxy.Options.OnCall.
func (o *proxyObserver) onCall(ctx context.Context, c mcpproxy.CallStart) (context.Context, func(mcpproxy.CallRecord)) {
	var span trace.Span
	if o.tracer != nil {
		if c.Trace != nil {
			ctx = o.prop.Extract(ctx, propagation.MapCarrier(c.Trace))
		}
		tool := clip(c.Tool, 128)
		ctx, span = o.tracer.Start(ctx, "execute_tool "+tool, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				semconv.GenAIOperationNameExecuteTool,
				semconv.GenAIToolName(tool),
				attribute.String("mcp.method.name", "tools/call"),
				attribute.String("preflight.principal", clip(c.Principal, 128)),
				attribute.String("preflight.run", c.Run),
				attribute.String("http.request.header.x-request-id", c.RequestID),
			))
	}
	return ctx, func(r mcpproxy.CallRecord) { o.record(span, r) }
}

// callMeta is mcpproxy.Options.CallMeta: the trace context of the call's
// span, for the upstream.
func (o *proxyObserver) callMeta(ctx context.Context) map[string]string {
	if o.tracer == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := propagation.MapCarrier{}
	o.prop.Inject(ctx, m)
	return m
}

// record writes the call's log line, counts it and ends its span.
func (o *proxyObserver) record(span trace.Span, r mcpproxy.CallRecord) {
	verdict, reason := r.Verdict, "none"
	if verdict == "" {
		verdict = "none"
	}
	if len(r.ReasonCodes) > 0 {
		reason = r.ReasonCodes[0]
	}
	rcodes := r.ReasonCodes
	if rcodes == nil {
		rcodes = []string{}
	}
	attrs := []any{"requestId", r.RequestID, "principal", r.Principal, "run", r.Run, "tool", clip(r.Tool, 128),
		"answer", r.Answer, "verdict", r.Verdict, "reasonCodes", rcodes,
		"reservedUsd", r.ReservedUSD, "settledUsd", r.SettledUSD, "upstream", r.Upstream}
	if r.UpstreamHTTPStatus != 0 {
		attrs = append(attrs, "upstreamStatus", r.UpstreamHTTPStatus)
	}
	if r.Upstream != "" {
		attrs = append(attrs, "upstreamMs", r.UpstreamDuration.Milliseconds())
	}
	attrs = append(attrs, "durationMs", r.Duration.Milliseconds(), "stateless", r.Stateless)
	if r.Error != "" {
		attrs = append(attrs, "error", clip(r.Error, 512))
	}
	if r.SchemaUnchecked != "" {
		attrs = append(attrs, "schemaUnchecked", clip(r.SchemaUnchecked, 512))
	}
	if r.Approval != "" {
		attrs = append(attrs, "approval", r.Approval)
	}
	if len(r.OutputIssues) > 0 {
		// The first, and how many: a warning, the result was passed on.
		attrs = append(attrs, "outputIssues", len(r.OutputIssues), "outputIssue", clip(r.OutputIssues[0], 512))
	}
	logIt := true
	if r.Answer == mcpproxy.AnswerRefused && r.Run == "" {
		// Refused at a bound on calls in flight, before its run was
		// known: under overload these come by the thousand, so their
		// lines are limited (the metrics count every one).
		var skipped int
		if skipped, logIt = o.overload.allow(time.Now()); logIt && skipped > 0 {
			attrs = append(attrs, "refusalsNotLogged", skipped)
		}
	}
	if logIt {
		o.log.Info("mcp proxy: tools/call", attrs...)
	}

	if o.calls != nil {
		who := o.label(r.Principal)
		o.calls.WithLabelValues(r.Answer, verdict, reason).Inc()
		o.principal.WithLabelValues(who, r.Answer).Inc()
		if r.Upstream != "" {
			o.upstream.WithLabelValues(r.Upstream).Observe(r.UpstreamDuration.Seconds())
		}
		o.addUSD(o.spent, "spent", who, r.SettledUSD)
		o.addUSD(o.reserved, "reserved", who, r.ReservedUSD)
	}
	if span != nil {
		sattrs := []attribute.KeyValue{attribute.String("preflight.answer", r.Answer)}
		if r.Verdict != "" {
			sattrs = append(sattrs, attribute.String("preflight.decision", r.Verdict), attribute.StringSlice("preflight.reason_codes", r.ReasonCodes))
		}
		if r.ReservedUSD != "" {
			sattrs = append(sattrs, attribute.String("preflight.reserved_usd", r.ReservedUSD))
		}
		if r.SettledUSD != "" {
			sattrs = append(sattrs, attribute.String("preflight.settled_usd", r.SettledUSD))
		}
		if r.Upstream != "" {
			sattrs = append(sattrs, attribute.String("preflight.upstream", r.Upstream))
		}
		switch {
		case r.Error != "":
			span.SetStatus(codes.Error, clip(r.Error, 256))
			sattrs = append(sattrs, semconv.ErrorTypeKey.String("rpc_error"))
		case r.Upstream == mcpproxy.UpstreamToolError:
			span.SetStatus(codes.Error, "tool_error")
			sattrs = append(sattrs, semconv.ErrorTypeKey.String("tool_error"))
		}
		span.SetAttributes(sattrs...)
		span.End()
	}
}

// addUSD adds the decimal amount usd to c's series for who (c is the
// counter named name). Amounts are summed exactly; the counter follows
// the exact sum, so that it does not drift by float rounding.
func (o *proxyObserver) addUSD(c *prometheus.CounterVec, name, who, usd string) {
	if usd == "" {
		return
	}
	v, ok := new(big.Rat).SetString(usd)
	if !ok || v.Sign() <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock() // held while adding, so that the series follows the sums in order
	key := name + "\x00" + who
	sum := o.spend[key]
	if sum == nil {
		sum = new(big.Rat)
		o.spend[key] = sum
	}
	before, _ := sum.Float64()
	sum.Add(sum, v)
	after, _ := sum.Float64()
	c.WithLabelValues(who).Add(after - before)
}

// clip bounds a client-supplied string to max bytes, cut on a rune
// boundary.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// proxyHealth serves /health (the process is up) and /ready (it takes
// requests: 503 once shutdown has begun) on the proxy's listener.
func proxyHealth(ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		writeHealth(w, r, http.StatusOK, `{"status":"ok"}`)
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		if !ready() {
			w.Header().Set("Retry-After", "1")
			writeHealth(w, r, http.StatusServiceUnavailable, `{"status":"draining"}`)
			return
		}
		writeHealth(w, r, http.StatusOK, `{"status":"ready"}`)
	})
	return mux
}

func writeHealth(w http.ResponseWriter, r *http.Request, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		w.Write([]byte(`{"error":{"code":"method_not_allowed","message":"use GET or HEAD"}}`))
		return
	}
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		w.Write([]byte(strings.TrimSpace(body)))
	}
}
