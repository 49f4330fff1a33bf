package server

import (
	"context"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/agentpreflight/preflight"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// observation collects what one request's handler learned (a decision, a
// check's verdict, a payment outcome) for the metrics and the span written
// when the request ends. It lives in the request's context.
type observation struct {
	requestID string

	// Set by noteDecision (HTTP tool-call route).
	decision    string
	reason      string // first reason code
	fingerprint string

	// Set by noteCheck (HTTP check route).
	checked     bool
	valid       bool
	economics   string // proceed, abort, or "" without economics
	requestHash string

	// Set by the paywall observer; the last outcome of the request.
	payment string
}

type observationKey struct{}

// observationFrom returns the request's observation, or nil outside a
// request served by New's handler.
func observationFrom(ctx context.Context) *observation {
	o, _ := ctx.Value(observationKey{}).(*observation)
	return o
}

// noteDecision records the decision a tool-call request produced.
func noteDecision(ctx context.Context, d *preflight.ToolCallDecision) {
	if o := observationFrom(ctx); o != nil {
		o.decision = string(d.Verdict)
		if len(d.ReasonCodes) > 0 {
			o.reason = string(d.ReasonCodes[0])
		}
		o.fingerprint = d.RequestFingerprint
	}
}

// noteCheck records the result a check request produced.
func noteCheck(ctx context.Context, res *preflight.CheckResult) {
	if o := observationFrom(ctx); o != nil {
		o.checked = true
		o.valid = res.Valid
		if res.Economics != nil {
			o.economics = string(res.Economics.Advice)
		}
		o.requestHash = res.RequestHash
	}
}

// observer wraps the routes with a request id, metrics and a server span.
type observer struct {
	next    http.Handler
	routeOf func(path string) string // the route's path, or "" when none matches
	metrics *metrics                 // nil when metrics are off
	tracer  trace.Tracer             // nil when tracing is off
	prop    propagation.TextMapPropagator
}

func (o *observer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var start time.Time
	if o.metrics != nil {
		start = time.Now() // only the latency histogram needs it; a clock read is not free
	}
	st := &requestState{}
	ob := &st.ob
	ob.requestID = requestID(headerValue(r.Header, headerRequestID))
	st.idHeader[0] = ob.requestID
	w.Header()[headerRequestID] = st.idHeader[:] // as Header.Set does, without allocating the slice
	route := o.routeOf(r.URL.Path)
	st.ctx = observationCtx{Context: r.Context(), ob: ob}
	var ctx context.Context = &st.ctx
	var span trace.Span
	if o.tracer != nil {
		ctx = o.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
		name := r.Method
		if route != "" {
			name += " " + route
		}
		ctx, span = o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(requestAttributes(r, route, ob.requestID)...))
	}
	if o.metrics != nil {
		o.metrics.inFlight.Inc()
	}
	rec := &st.rec
	rec.ResponseWriter = w
	defer func() {
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		if o.metrics != nil {
			o.metrics.inFlight.Dec()
			o.metrics.observeRequest(route, status, time.Since(start), ob)
		}
		if span != nil {
			endServerSpan(span, status, ob)
		}
	}()
	o.next.ServeHTTP(rec, r.WithContext(ctx))
}

// headerValue is h.Get(key) for a key already in canonical form, without
// canonicalizing it again.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// requestState is what the observer keeps for one request, in one
// allocation.
type requestState struct {
	ob       observation
	rec      responseRecorder
	idHeader [1]string // the X-Request-Id header's value
	ctx      observationCtx
}

// observationCtx is the request's context with its observation, as
// context.WithValue(parent, observationKey{}, ob) would make it but kept in
// the requestState instead of an allocation of its own. Done, Err and
// Deadline are the parent's, so that contexts derived from it find the
// parent's cancellation as they would through WithValue's.
type observationCtx struct {
	context.Context
	ob *observation
}

func (c *observationCtx) Value(key any) any {
	if key == (observationKey{}) {
		return c.ob
	}
	return c.Context.Value(key)
}

// requestAttributes are the server span's attributes known at its start.
func requestAttributes(r *http.Request, route, id string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		httpMethodAttribute(r.Method),
		semconv.URLPath(r.URL.Path),
		semconv.URLScheme(scheme(r)),
		semconv.NetworkProtocolVersion(protocolVersion(r)),
		attribute.String("http.request.header.x-request-id", id),
	}
	if route != "" {
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(clipAttribute(ua)))
	}
	return attrs
}

// endServerSpan sets what the request produced and ends the span. A
// decision or a check's verdict is an attribute only when the answer
// returned it (status 200), as the metrics count them: a paid route's 402,
// a failed settlement or a 503 computed the decision but did not sell it.
func endServerSpan(span trace.Span, status int, ob *observation) {
	attrs := []attribute.KeyValue{semconv.HTTPResponseStatusCode(status)}
	returned := status == http.StatusOK
	if ob.decision != "" && returned {
		attrs = append(attrs,
			attribute.String("preflight.decision", ob.decision),
			attribute.String("preflight.reason_code", ob.reason),
			attribute.String("preflight.fingerprint", ob.fingerprint))
	}
	if ob.checked && returned {
		attrs = append(attrs, attribute.Bool("preflight.check.valid", ob.valid),
			attribute.String("preflight.request_hash", ob.requestHash))
		if ob.economics != "" {
			attrs = append(attrs, attribute.String("preflight.check.economics", ob.economics))
		}
	}
	if ob.payment != "" {
		attrs = append(attrs, attribute.String("preflight.payment.outcome", ob.payment))
	}
	if status >= 500 {
		// Server spans mark only 5xx as errors; a 4xx is the client's.
		attrs = append(attrs, semconv.ErrorTypeKey.String(http.StatusText(status)))
		span.SetStatus(codes.Error, "")
	}
	span.SetAttributes(attrs...)
	span.End()
}

// httpMethodAttribute is http.request.method: a known method as sent, any
// other as _OTHER (the semantic conventions bound its values).
func httpMethodAttribute(m string) attribute.KeyValue {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return semconv.HTTPRequestMethodKey.String(m)
	}
	return semconv.HTTPRequestMethodKey.String("_OTHER")
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func protocolVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 1 && r.ProtoMinor == 1:
		return "1.1"
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	}
	return r.Proto
}

// clipAttribute bounds a client-supplied attribute value to 256 bytes, cut
// on a rune boundary.
func clipAttribute(s string) string {
	const max = 256
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// responseRecorder remembers a response's status for the observer.
type responseRecorder struct {
	http.ResponseWriter
	status int
}

func (r *responseRecorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush forwards to the underlying writer (the MCP transport flushes).
func (r *responseRecorder) Flush() {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *responseRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
