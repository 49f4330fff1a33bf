package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/server"
	"github.com/prometheus/client_golang/prometheus"
)

// The bodies of the per-request cost benchmarks: the small tool-call
// decision and the 2.9 KB email check of issue #38's server comparison.
var (
	benchDecisionBody = `{"runId":"run-1","stepId":"step-1","tool":{"provider":"search","operation":"web_search","request":{"query":"preflight checks for agents","max_results":5},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`
	benchEmailBody    = emailCheckBody()
)

// emailCheckBody is a check of an email send (about 2.9 KB): a text body
// and addresses under patterns.
func emailCheckBody() string {
	text := strings.Repeat("Hello team, the quarterly figures are attached for review before Friday. ", 31)
	return `{"request":{"method":"POST","url":"https://mail.example.com/v1/messages","headers":{"Content-Type":"application/json"},` +
		`"body":{"from":"ops@example.com","to":["alice@example.com","bob@example.org"],"subject":"Quarterly figures","text":"` + text + `"}},` +
		`"schema":{"type":"object","required":["from","to","subject","text"],"additionalProperties":false,"properties":{` +
		`"from":{"type":"string","pattern":"^[^@\\s]+@[^@\\s]+\\.[a-z]+$"},` +
		`"to":{"type":"array","items":{"type":"string","pattern":"^[^@\\s]+@[^@\\s]+\\.[a-z]+$"}},` +
		`"subject":{"type":"string","minLength":1,"maxLength":200},"text":{"type":"string","maxLength":100000}}}}`
}

// bareFloor is the floor of the server comparison (as benchmarks/load's
// BareHandler): read the body under the same limit, unmarshal it into any
// with encoding/json, write a fixed 300-byte JSON answer.
func bareFloor() http.Handler {
	const head, tail = `{"decision":"allow","reason":"bare baseline","padding":"`, `"}`
	answer := []byte(head + strings.Repeat("x", 300-len(head)-len(tail)) + tail)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, server.MaxBodyBytes))
		if err != nil {
			http.Error(w, `{"error":"unreadable body"}`, http.StatusBadRequest)
			return
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			http.Error(w, `{"error":"invalid json"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(answer)
	})
}

// benchWriter is a reusable ResponseWriter that keeps nothing but the
// status, so that the benchmark's own harness costs next to nothing.
type benchWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *benchWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}
func (w *benchWriter) Flush() {}

// benchBody is a request body that can be read again.
type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

// servePOST runs h once on a POST of body to path, reusing w, r and rb,
// and fails unless the answer is 200.
func servePOST(tb testing.TB, h http.Handler, w *benchWriter, r *http.Request, rb *benchBody, body []byte) {
	clear(w.h)
	w.status, w.n = 0, 0
	rb.Reset(body)
	r.Body = rb
	r.ContentLength = int64(len(body))
	h.ServeHTTP(w, r)
	if w.status != http.StatusOK {
		tb.Fatalf("status %d", w.status)
	}
}

func newBenchRequest(path string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://localhost"+path, nil)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	return r
}

// benchHandlers are the handler chains compared: the floor, then
// preflightd's chain layer by layer, as run.go builds it; "full" is all of
// it, its access log buffered as run's (written to /dev/null, one system
// call per batch); "full-slog" is the access log as it was before, one
// slog line and one write to /dev/null per request.
func benchHandlers() []struct {
	name string
	h    http.Handler
} {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := server.Config{Logger: logger, Drain: &server.Drain{}}
	mcfg := cfg
	mcfg.Metrics = prometheus.NewRegistry()
	sink := newLogSink(devNull)
	return []struct {
		name string
		h    http.Handler
	}{
		{"floor", bareFloor()},
		{"server", server.New(cfg)},
		{"server+framing", rejectAmbiguousFraming(server.New(cfg))},
		{"full", accessLog(sink, logger, rejectAmbiguousFraming(server.New(cfg)))},
		{"full+metrics", accessLog(sink, logger, rejectAmbiguousFraming(server.New(mcfg)))},
		{"full-slog", slogAccessLog(slog.New(slog.NewJSONHandler(devNull, nil)), rejectAmbiguousFraming(server.New(cfg)))},
	}
}

// devNull is /dev/null opened for writing: each write is a system call,
// as each of preflightd's log writes is.
var devNull = func() *os.File {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		panic(err)
	}
	return f
}()

// BenchmarkServe compares, on the same bodies in one run, the per-request
// cost of preflightd's handler chain (no network) with the bare floor.
func BenchmarkServe(b *testing.B) {
	bodies := []struct{ name, path, body string }{
		{"decision", "/v0.2/preflight/tool-call", benchDecisionBody},
		{"email-check", "/check-request", benchEmailBody},
	}
	for _, bd := range bodies {
		for _, hc := range benchHandlers() {
			b.Run(bd.name+"/"+hc.name, func(b *testing.B) {
				body := []byte(bd.body)
				w, r, rb := &benchWriter{h: http.Header{}}, newBenchRequest(bd.path), &benchBody{}
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					servePOST(b, hc.h, w, r, rb, body)
				}
			})
		}
	}
}
