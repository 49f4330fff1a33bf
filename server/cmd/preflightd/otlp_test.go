package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes every export with
// the OTLP protobuf types and keeps the spans with their service names.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
	bad   []string
}

type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	o := &otlpReceiver{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := o.read(r)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			o.bad = append(o.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+": "+errString(err))
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					o.spans = append(o.spans, receivedSpan{service, s})
				}
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *otlpReceiver) read(r *http.Request) ([]byte, error) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	return io.ReadAll(body)
}

func errString(err error) string {
	if err == nil {
		return "unexpected request"
	}
	return err.Error()
}

// TestOTLPExport starts the real binary with OTEL_EXPORTER_OTLP_ENDPOINT
// pointing at an OTLP/HTTP receiver, sends a request inside a trace, stops
// the binary (which flushes) and finds the server span in the receiver,
// decoded with the OTLP protobuf types, in the caller's trace.
func TestOTLPExport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	recv := newOTLPReceiver(t)
	d := startDaemonEnv(t, buildBinary(t), []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.srv.URL,
		"OTEL_SERVICE_NAME=preflight-e2e",
	})

	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, _ := http.NewRequest("POST", "http://"+d.addr+"/check-request", strings.NewReader(`{"request":{"method":"POST","url":"https://api.example.com/x","body":{"a":1}},"schema":{"type":"object"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
	req.Header.Set("X-Request-Id", "otlp-e2e-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-d.done; err != nil {
		t.Fatalf("exit: %v\n%s", err, d.all)
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.bad) > 0 {
		t.Errorf("the receiver refused exports: %q", recv.bad)
	}
	var found *receivedSpan
	for i, s := range recv.spans {
		if s.span.Name == "POST /check-request" {
			found = &recv.spans[i]
		}
	}
	if found == nil {
		t.Fatalf("no POST /check-request span among %d received\n%s", len(recv.spans), d.all)
	}
	s := found.span
	if hex.EncodeToString(s.TraceId) != traceID || hex.EncodeToString(s.ParentSpanId) != parentID ||
		s.Kind != tracepb.Span_SPAN_KIND_SERVER || found.service != "preflight-e2e" {
		t.Errorf("span trace %x parent %x kind %v service %q: want the caller's trace, a server span, service preflight-e2e",
			s.TraceId, s.ParentSpanId, s.Kind, found.service)
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		if iv, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_IntValue); ok {
			attrs[kv.Key] = strconv.FormatInt(iv.IntValue, 10)
		} else {
			attrs[kv.Key] = kv.GetValue().GetStringValue()
		}
	}
	for k, want := range map[string]string{"http.route": "/check-request", "http.request.header.x-request-id": "otlp-e2e-1", "http.response.status_code": "200"} {
		if attrs[k] != want {
			t.Errorf("attribute %s = %q, want %q (all %v)", k, attrs[k], want, attrs)
		}
	}
	if !bytes.Contains(d.all.Bytes(), []byte(`"tracing":true`)) {
		t.Errorf("the listening line does not say tracing is on:\n%s", d.all)
	}
}
