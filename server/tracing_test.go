package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/x402"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spanAttrs returns a span's attributes as strings by key.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func findSpan(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	t.Fatalf("no span %q among %q", name, names)
	return nil
}

// wantAttrs reports every attribute of want that s lacks or holds with
// another value; a want value "*" accepts any non-empty value.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string) {
	t.Helper()
	got := spanAttrs(s)
	for k, v := range want {
		if g, ok := got[k]; !ok || (v == "*" && g == "") || (v != "*" && g != v) {
			t.Errorf("span %q: attribute %s = %q, want %q (all: %v)", s.Name(), k, g, v, got)
		}
	}
}

// TestTracingPaidRequest: a paid request carrying a W3C traceparent gets a
// server span in the caller's trace, child spans for verify and settle whose
// traceparent reaches the facilitator, and the decision's attributes.
func TestTracingPaidRequest(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	fac := newScriptedFacilitator(t)
	cfg := paidConfig(fac.srv.URL, nil)
	cfg.TracerProvider = tp
	ts := httptest.NewServer(New(cfg))
	defer ts.Close()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", ts.URL+"/v0.2/preflight/tool-call", strings.NewReader(toolAllow))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
	req.Header.Set("X-Request-Id", "req-trace-1")
	req.Header.Set(x402.HeaderPaymentSignature, paymentSignature(cfg.Payment, "ok-trace", ""))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Request-Id") != "req-trace-1" {
		t.Fatalf("status %d, X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}

	spans := rec.Ended()
	srv := findSpan(t, spans, "POST /v0.2/preflight/tool-call")
	if srv.SpanKind() != trace.SpanKindServer || srv.SpanContext().TraceID().String() != traceID ||
		srv.Parent().SpanID().String() != parentID || !srv.Parent().IsRemote() {
		t.Errorf("server span kind %v, trace %s, parent %s (remote %v): want a server span continuing the incoming traceparent",
			srv.SpanKind(), srv.SpanContext().TraceID(), srv.Parent().SpanID(), srv.Parent().IsRemote())
	}
	wantAttrs(t, srv, map[string]string{
		"http.request.method":              "POST",
		"http.route":                       "/v0.2/preflight/tool-call",
		"url.path":                         "/v0.2/preflight/tool-call",
		"http.response.status_code":        "200",
		"http.request.header.x-request-id": "req-trace-1",
		"preflight.decision":               "allow",
		"preflight.reason_code":            "NO_PROVEN_WASTE",
		"preflight.fingerprint":            "*",
		"preflight.payment.outcome":        "settled",
	})
	var events []string
	for _, e := range srv.Events() {
		events = append(events, e.Name)
	}
	if strings.Join(events, ",") != "x402 verified,x402 settled" {
		t.Errorf("server span events %q, want the payment steps", events)
	}

	fac.mu.Lock()
	sent := map[string][]string{"/verify": fac.traceparents["/verify"], "/settle": fac.traceparents["/settle"]}
	fac.mu.Unlock()
	for _, name := range []string{"verify", "settle"} {
		c := findSpan(t, spans, "x402 "+name)
		if c.SpanKind() != trace.SpanKindClient || c.Parent().SpanID() != srv.SpanContext().SpanID() || c.SpanContext().TraceID().String() != traceID {
			t.Errorf("%s span: kind %v, parent %s: want a client child of the server span", name, c.SpanKind(), c.Parent().SpanID())
		}
		wantAttrs(t, c, map[string]string{"http.request.method": "POST", "http.response.status_code": "200", "server.address": "127.0.0.1"})
		want := "00-" + traceID + "-" + c.SpanContext().SpanID().String() + "-01"
		if got := sent["/"+name]; len(got) != 1 || got[0] != want {
			t.Errorf("traceparent sent to /%s: %q, want [%q]", name, got, want)
		}
	}
}

// TestTracingCheckAndMCP: a check's span carries its verdict and
// requestHash; an MCP tool call is a span named after the GenAI tool
// execution, inside the POST /mcp span; a request without traceparent
// starts a new trace; an unknown path's span has no route.
func TestTracingCheckAndMCP(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	cfg := testConfig
	cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ts := httptest.NewServer(New(cfg))
	defer ts.Close()

	resp, err := http.Post(ts.URL+"/check-request", "application/json", strings.NewReader(checkInvalid))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get(ts.URL + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := mcpConnect(t, ts, "")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpToolCheckRequest, Arguments: json.RawMessage(checkValid)}); err != nil {
		t.Fatal(err)
	}
	cs.Close()

	spans := rec.Ended()
	check := findSpan(t, spans, "POST /check-request")
	if check.Parent().IsValid() {
		t.Errorf("a request without traceparent has parent %v", check.Parent())
	}
	wantAttrs(t, check, map[string]string{
		"http.response.status_code": "200", "preflight.check.valid": "false", "preflight.request_hash": "*",
		"http.request.header.x-request-id": "*",
	})
	if _, ok := spanAttrs(check)["preflight.check.economics"]; ok {
		t.Error("a check without economics has an economics attribute")
	}
	none := findSpan(t, spans, "GET")
	wantAttrs(t, none, map[string]string{"http.response.status_code": "404", "url.path": "/nowhere"})
	if _, ok := spanAttrs(none)["http.route"]; ok {
		t.Error("an unmatched path has an http.route")
	}

	tool := findSpan(t, spans, "execute_tool check_request")
	wantAttrs(t, tool, map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "check_request", "mcp.method.name": "tools/call"})
	var parent sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().SpanID() == tool.Parent().SpanID() {
			parent = s
		}
	}
	if parent == nil || parent.Name() != "POST /mcp" {
		t.Errorf("tool span's parent is %v, want the POST /mcp server span", parent)
	}
}

// TestTracingUnsoldDecisionHasNoAttributes: a paid route's answer that does
// not return the decision (the 402 challenge, a payment the facilitator
// rejects, a refused settlement, a facilitator that is down) leaves the
// decision out of the span, as the decision counter leaves it out: nothing
// was sold. The settled request beside them carries it.
func TestTracingUnsoldDecisionHasNoAttributes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	fac := newScriptedFacilitator(t)
	cfg := paidConfig(fac.srv.URL, nil)
	cfg.TracerProvider = tp
	ts := httptest.NewServer(New(cfg))
	defer ts.Close()

	for _, tc := range []struct {
		nonce  string // "" sends no payment
		status int
	}{
		{"", 402},
		{"invalid", 402},
		{"settle-refused", 402},
		{"verify-down", 503},
		{"settle-down", 503},
		{"ok-sold", 200},
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/v0.2/preflight/tool-call", strings.NewReader(toolAllow))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", "req-"+tc.nonce)
		if tc.nonce != "" {
			req.Header.Set(x402.HeaderPaymentSignature, paymentSignature(cfg.Payment, tc.nonce, ""))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("nonce %q: status %d, want %d", tc.nonce, resp.StatusCode, tc.status)
		}
	}
	decisionKeys := []string{"preflight.decision", "preflight.reason_code", "preflight.fingerprint"}
	spans := rec.Ended()
	if len(spans) == 0 {
		t.Fatal("no spans recorded")
	}
	seen := 0
	for _, s := range spans {
		got := spanAttrs(s)
		id, status := got["http.request.header.x-request-id"], got["http.response.status_code"]
		if id == "" {
			continue // a client span of a facilitator call
		}
		seen++
		for _, k := range decisionKeys {
			_, has := got[k]
			if want := status == "200"; has != want {
				t.Errorf("span of %s (status %s): has %s = %t, want %t (attributes %v)", id, status, k, has, want, got)
			}
		}
	}
	if seen != 6 {
		t.Errorf("%d server spans, want 6", seen)
	}
}
