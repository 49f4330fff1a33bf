package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkObservability measures the tool-call route with observability
// off, with metrics, and with metrics and tracing (spans batched to an
// exporter that discards them). Compare the sub-benchmarks with benchstat.
func BenchmarkObservability(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { tp.Shutdown(b.Context()) })
	for _, v := range []struct {
		name string
		cfg  Config
	}{
		{"off", Config{}},
		{"metrics", Config{Metrics: prometheus.NewRegistry()}},
		{"metrics+tracing", Config{Metrics: prometheus.NewRegistry(), TracerProvider: tp}},
	} {
		b.Run(v.name, func(b *testing.B) {
			h := New(v.cfg)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v0.2/preflight/tool-call", strings.NewReader(toolAllow)))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}
