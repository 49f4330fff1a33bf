package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// benchmarkRoute measures the handler alone (no network) on one POST.
func benchmarkRoute(b *testing.B, path, body string) {
	h := New(Config{})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

func BenchmarkCheckRequest(b *testing.B) { benchmarkRoute(b, "/check-request", checkValid) }
func BenchmarkToolCall(b *testing.B)     { benchmarkRoute(b, "/v0.2/preflight/tool-call", toolAllow) }
func BenchmarkCheckRequest64KiB(b *testing.B) {
	benchmarkRoute(b, "/check-request", string(padded(&testing.T{}, MaxBodyBytes)))
}
func BenchmarkDocsHTML(b *testing.B) {
	h := New(Config{})
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/docs", nil))
	}
}
