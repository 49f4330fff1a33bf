package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// serviceVersion is reported as service.version in traces: the published
// interface version.
const serviceVersion = "0.3.0"

// tracingWanted decides the one thing about OpenTelemetry that preflightd
// decides itself: whether to export traces at all. They are off under
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, on under
// OTEL_TRACES_EXPORTER=otlp, and otherwise on when an OTLP endpoint is set.
// preflightd ships one exporter, so another OTEL_TRACES_EXPORTER is an
// error. Every other OTEL_* variable is read by the SDK itself.
func tracingWanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exporter := getenv("OTEL_TRACES_EXPORTER"); exporter {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported: preflightd exports traces with otlp (OTLP over HTTP) or none", exporter)
	}
}

// startTracing returns a tracer provider exporting over OTLP/HTTP as the
// OTEL_* variables configure it (endpoint, headers, timeout, compression,
// sampler, resource attributes, batch delays), or nil when tracing is off.
// Export errors are logged as warnings; they never stop the server.
func startTracing(ctx context.Context, getenv func(string) string, logger *slog.Logger) (*sdktrace.TracerProvider, error) {
	on, err := tracingWanted(getenv)
	if err != nil || !on {
		return nil, err
	}
	// The SDK's own log lines (a certificate file it cannot read, an export
	// that failed) go to the JSON log like every other line.
	otelLog := logger.With("component", "opentelemetry")
	otel.SetLogger(logr.FromSlogHandler(sdkLogHandler{otelLog.Handler()}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		otelLog.Warn("opentelemetry error", "error", err.Error())
	}))
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("preflightd"), semconv.ServiceVersion(serviceVersion)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// sdkLogHandler passes on the SDK's own log lines with their message and
// error only. The SDK attaches the text it could not parse to its lines,
// and for OTEL_EXPORTER_OTLP_HEADERS that is a header value, often a
// secret; its error never holds the value.
type sdkLogHandler struct{ slog.Handler }

func (h sdkLogHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" { // logr's key for the error of Logger.Error
			out.AddAttrs(a)
		}
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h sdkLogHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h sdkLogHandler) WithGroup(name string) slog.Handler {
	return sdkLogHandler{h.Handler.WithGroup(name)}
}

// newMetricsRegistry returns a registry holding the Go runtime and process
// collectors; the server adds its own.
func newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// metricsServer serves reg at /metrics on a listener of its own.
type metricsServer struct {
	srv    *http.Server
	ln     net.Listener
	served chan error
}

func startMetrics(addr string, reg *prometheus.Registry, logger *slog.Logger) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		Registry:          reg, // promhttp_metric_handler_* count scrapes
		EnableOpenMetrics: true,
	}))
	m := &metricsServer{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 5 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
		ln:     ln,
		served: make(chan error, 1),
	}
	// Its own small bound, counted in fdReserve: metrics are for scrapers.
	lim := newConnLimiter(ln, metricsMaxConnections, 5*time.Second, logger)
	m.srv.ConnState = lim.connState
	go func() { m.served <- m.srv.Serve(lim) }()
	logger.Info("metrics listening", "addr", ln.Addr().String(), "path", "/metrics")
	return m, nil
}

// stop closes the metrics listener; a scrape in flight is cut short.
func (m *metricsServer) stop() error {
	if m == nil {
		return nil
	}
	m.srv.Close()
	if err := <-m.served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
