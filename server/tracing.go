package server

import (
	"context"
	"log/slog"
	"net/http"
	"path"
	"time"

	"github.com/agentpreflight/preflight/server/internal/x402"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is what New wires into the handler, the paywall and the
// MCP server: metrics and tracer may each be nil (off).
type instrumentation struct {
	reg     prometheus.Registerer
	metrics *metrics
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	log     *slog.Logger
}

// newInstrumentation builds what cfg asks for. A registry that refuses the
// collectors is logged and leaves metrics off; it never stops the server.
func newInstrumentation(cfg Config, log *slog.Logger) *instrumentation {
	in := &instrumentation{reg: cfg.Metrics, prop: propagation.TraceContext{}, log: log}
	if cfg.Metrics != nil {
		m, err := newMetrics(cfg.Metrics)
		if err != nil {
			log.Error("metrics could not be registered; serving without them", "error", err.Error())
			in.reg = nil
		} else {
			in.metrics = m
		}
	}
	if cfg.TracerProvider != nil {
		in.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	return in
}

// attachMCP instruments the MCP server: tool-call spans and counters, and a
// gauge of its open sessions.
func (in *instrumentation) attachMCP(srv *mcp.Server) {
	if in.metrics == nil && in.tracer == nil {
		return
	}
	srv.AddReceivingMiddleware(in.mcpMiddleware)
	if in.reg != nil {
		if err := registerSessions(in.reg, srv); err != nil {
			in.log.Error("the MCP sessions gauge could not be registered", "error", err.Error())
		}
	}
}

// wrap puts the observer around the routes.
func (in *instrumentation) wrap(h *handler) http.Handler {
	return &observer{
		next: h,
		routeOf: func(p string) string {
			if h.routes[p] != nil {
				return p
			}
			return ""
		},
		metrics: in.metrics,
		tracer:  in.tracer,
		prop:    in.prop,
	}
}

// tracerName names the instrumentation scope of every span the server makes.
const tracerName = "github.com/agentpreflight/preflight/server"

// paymentOutcome is the paywall's Observe callback: it counts the outcome,
// keeps it for the request's span and adds it to the span as an event.
func (in *instrumentation) paymentOutcome(ctx context.Context, o x402.Outcome) {
	if in.metrics != nil {
		in.metrics.payments.WithLabelValues(string(o)).Inc()
	}
	if ob := observationFrom(ctx); ob != nil {
		ob.payment = string(o)
	}
	trace.SpanFromContext(ctx).AddEvent("x402 "+string(o), trace.WithAttributes(attribute.String("preflight.payment.outcome", string(o))))
}

// facilitatorTransport wraps the facilitator client's transport: each call
// gets a client span (x402 verify, x402 settle), the W3C traceparent of that
// span, and a latency observation.
type facilitatorTransport struct {
	base http.RoundTripper
	in   *instrumentation
}

func (t *facilitatorTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	endpoint := path.Base(req.URL.Path)
	switch endpoint {
	case "verify", "settle", "supported":
	default:
		endpoint = "other"
	}
	ctx := req.Context()
	var span trace.Span
	if t.in.tracer != nil {
		ctx, span = t.in.tracer.Start(ctx, "x402 "+endpoint, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(
				httpMethodAttribute(req.Method),
				semconv.ServerAddress(req.URL.Hostname()),
				semconv.URLFull(req.URL.Scheme+"://"+req.URL.Host+req.URL.Path),
			))
		req = req.Clone(ctx) // a RoundTripper must not change the caller's request
		t.in.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	if t.in.metrics != nil {
		result := "answered"
		if err != nil {
			result = "error"
		}
		t.in.metrics.facilitator.WithLabelValues(endpoint, result).Observe(time.Since(start).Seconds())
	}
	if span != nil {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(semconv.ErrorTypeKey.String("transport"))
		} else {
			span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
			if resp.StatusCode >= 400 {
				span.SetStatus(codes.Error, "")
				span.SetAttributes(semconv.ErrorTypeKey.String(http.StatusText(resp.StatusCode)))
			}
		}
		span.End()
	}
	return resp, err
}

// instrumentPayment makes pc report outcomes to in and sends its facilitator
// calls through an instrumented copy of its HTTP client.
func (in *instrumentation) instrumentPayment(pc *x402.Config) {
	pc.Observe = in.paymentOutcome
	client := pc.HTTPClient
	if client == nil {
		client = x402.DefaultHTTPClient()
	}
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &facilitatorTransport{base: base, in: in}
	pc.HTTPClient = &c
}

// mcpMiddleware counts tools/call requests by tool and result and wraps each
// in a span named after the GenAI conventions' tool execution.
func (in *instrumentation) mcpMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		tool := call.Params.Name
		switch tool {
		case mcpToolCheckRequest, mcpToolToolCall:
		default:
			tool = "unknown" // a client-chosen name is not a label value
		}
		var span trace.Span
		if in.tracer != nil {
			ctx, span = in.tracer.Start(ctx, "execute_tool "+tool, trace.WithSpanKind(trace.SpanKindInternal),
				trace.WithAttributes(
					semconv.GenAIOperationNameExecuteTool,
					semconv.GenAIToolName(tool),
					attribute.String("mcp.method.name", method),
				))
		}
		res, err := next(ctx, method, req)
		result := "ok"
		if err != nil {
			result = "protocol_error"
		} else if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			result = "tool_error"
		}
		if in.metrics != nil {
			in.metrics.toolCalls.WithLabelValues(tool, result).Inc()
		}
		if span != nil {
			if result != "ok" {
				span.SetStatus(codes.Error, result)
				span.SetAttributes(semconv.ErrorTypeKey.String(result))
			}
			span.End()
		}
		return res, err
	}
}
