package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/x402"
	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// scriptedFacilitator stands in for an x402 facilitator, which would need a
// chain. Each payment's authorization nonce scripts its answers: "ok"
// verifies and settles; "invalid" fails verification; "verify-down" makes
// /verify answer 500 without a verdict; "settle-refused" verifies and then
// refuses settlement; "settle-down" verifies and then answers /settle 500;
// "pending" verifies and then reports settlement_pending. It records the
// traceparent header of every call.
type scriptedFacilitator struct {
	srv *httptest.Server

	mu           sync.Mutex
	traceparents map[string][]string // by path
	settleHook   func()              // called when /settle arrives, before answering
}

func newScriptedFacilitator(t testing.TB) *scriptedFacilitator {
	t.Helper()
	f := &scriptedFacilitator{traceparents: map[string][]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *scriptedFacilitator) serve(w http.ResponseWriter, r *http.Request) {
	var call struct {
		PaymentPayload struct {
			Payload struct {
				Authorization struct {
					Nonce string `json:"nonce"`
				} `json:"authorization"`
			} `json:"payload"`
		} `json:"paymentPayload"`
	}
	json.NewDecoder(r.Body).Decode(&call)
	f.mu.Lock()
	f.traceparents[r.URL.Path] = append(f.traceparents[r.URL.Path], r.Header.Get("Traceparent"))
	hook := f.settleHook
	f.mu.Unlock()
	nonce := x402test.Script(call.PaymentPayload.Payload.Authorization.Nonce)
	reply := func(status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	const payer = `"payer":"0x2222222222222222222222222222222222222222"`
	const tx = `"transaction":"0x` + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12" + `","network":"eip155:8453"`
	switch r.URL.Path + " " + nonce {
	case "/verify invalid":
		reply(200, `{"isValid":false,"invalidReason":"invalid_exact_evm_signature",`+payer+`}`)
	case "/verify verify-down":
		reply(500, `internal error`)
	case "/settle settle-refused":
		reply(200, `{"success":false,"errorReason":"invalid_exact_evm_transaction_failed","transaction":"","network":"eip155:8453"}`)
	case "/settle settle-down":
		reply(502, `bad gateway`)
	case "/settle pending":
		reply(200, `{"success":false,"errorReason":"settlement_pending",`+tx+`,`+payer+`}`)
	default:
		if r.URL.Path == "/verify" {
			reply(200, `{"isValid":true,`+payer+`}`)
			return
		}
		if hook != nil {
			hook()
		}
		reply(200, `{"success":true,`+payer+`,`+tx+`}`)
	}
}

// TestMetricsAfterScriptedMix runs a scripted mix of requests against a paid
// handler with metrics on (every check and decision kind, 400, 404, 405,
// 413, every payment outcome against the test facilitator, an MCP session
// with the official SDK client) and compares every counter exactly. The
// scrape then goes through promtool check metrics.
func TestMetricsAfterScriptedMix(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	fac := newScriptedFacilitator(t)
	var logs lockedBuffer
	cfg := paidConfig(fac.srv.URL, slog.New(slog.NewJSONHandler(&logs, nil)))
	cfg.Metrics = reg
	ts := httptest.NewServer(New(cfg))
	defer ts.Close()

	post := func(path, body string, header ...string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const tool = "/v0.2/preflight/tool-call"
	paid := func(body, nonce string) (int, []byte) {
		t.Helper()
		return post(tool, body, x402.HeaderPaymentSignature, paymentSignature(cfg.Payment, nonce, ""))
	}
	want := func(what string, got, want int) {
		t.Helper()
		if got != want {
			t.Errorf("%s: status %d, want %d", what, got, want)
		}
	}

	// Checks: valid, invalid, with economics (abort).
	s, _ := post("/check-request", checkValid)
	want("valid check", s, 200)
	s, _ = post("/check-request", checkInvalid)
	want("invalid check", s, 200)
	s, _ = post("/check-request", checkEcon)
	want("check with economics", s, 200)
	// Client errors.
	s, _ = post("/check-request", `{"request":`)
	want("malformed JSON", s, 400)
	s, _ = post(tool, `{}`)
	want("invalid tool call", s, 400)
	want("unknown path", get("/no-such-route"), 404)
	want("GET on a POST route", get("/check-request"), 405)
	s, _ = post("/check-request", `{"pad":"`+strings.Repeat("x", MaxBodyBytes)+`"}`)
	want("oversized body", s, 413)
	want("health", get("/health"), 200)
	// Every verdict, each paid and settled.
	s, first := paid(toolAllow, "ok-allow")
	want("allow", s, 200)
	var allow struct{ RequestFingerprint string }
	json.Unmarshal(first, &allow)
	for _, c := range []struct{ name, body string }{
		{"block", toolBlock}, {"defer", toolDefer}, {"advise", toolAdvise},
		{"reuse", fmt.Sprintf(toolReuseTemplate, allow.RequestFingerprint)},
	} {
		s, b := paid(c.body, "ok-"+c.name)
		want(c.name, s, 200)
		if !bytes.Contains(b, []byte(`"decision":"`+c.name+`"`)) {
			t.Errorf("%s: %s", c.name, b)
		}
	}
	// Every other payment outcome.
	s, _ = post(tool, toolAllow)
	want("no payment", s, 402)
	s, _ = post(tool, toolAllow, x402.HeaderPaymentSignature, "not base64!")
	want("malformed payment", s, 400)
	s, _ = paid(toolAllow, "invalid")
	want("rejected payment", s, 402)
	s, _ = paid(toolAllow, "verify-down")
	want("facilitator down at verify", s, 503)
	s, _ = paid(toolAllow, "settle-refused")
	want("settlement refused", s, 402)
	s, _ = paid(toolAllow, "settle-down")
	want("facilitator down at settle", s, 503)
	s, _ = paid(toolAllow, "pending")
	want("settlement pending", s, 503)
	// An MCP session with the official client: three tool calls, one an
	// input error.
	cs := mcpConnect(t, ts, "")
	ctx := context.Background()
	for _, c := range []struct {
		tool, args string
		isError    bool
	}{
		{mcpToolCheckRequest, checkValid, false},
		{mcpToolToolCall, toolAllow, false},
		{mcpToolToolCall, `{"runId":1}`, true},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
		if err != nil || res.IsError != c.isError {
			t.Fatalf("tools/call %s: %v, isError %v", c.tool, err, res != nil && res.IsError)
		}
	}
	cs.Close()

	got := gatherCounters(t, reg, "/mcp")
	wantCounters := map[string]float64{
		`preflight_checks_total{economics="abort",valid="false"}`: 1,
		`preflight_checks_total{economics="none",valid="false"}`:  1,
		`preflight_checks_total{economics="none",valid="true"}`:   1,

		`preflight_decisions_total{decision="advise",reason="UNSUPPORTED_OPERATION"}`: 1,
		`preflight_decisions_total{decision="allow",reason="NO_PROVEN_WASTE"}`:        1,
		`preflight_decisions_total{decision="block",reason="INVALID_PAYLOAD"}`:        1,
		`preflight_decisions_total{decision="defer",reason="BUDGET_EXCEEDED"}`:        1,
		`preflight_decisions_total{decision="reuse",reason="REUSE_FRESH_RESULT"}`:     1,

		`preflight_http_request_bodies_too_large_total{route="/check-request"}`: 1,

		`preflight_http_requests_total{code="200",route="/check-request"}`:            3,
		`preflight_http_requests_total{code="400",route="/check-request"}`:            1,
		`preflight_http_requests_total{code="405",route="/check-request"}`:            1,
		`preflight_http_requests_total{code="413",route="/check-request"}`:            1,
		`preflight_http_requests_total{code="200",route="/health"}`:                   1,
		`preflight_http_requests_total{code="404",route="unmatched"}`:                 1,
		`preflight_http_requests_total{code="200",route="/v0.2/preflight/tool-call"}`: 5,
		`preflight_http_requests_total{code="400",route="/v0.2/preflight/tool-call"}`: 2,
		`preflight_http_requests_total{code="402",route="/v0.2/preflight/tool-call"}`: 3,
		`preflight_http_requests_total{code="503",route="/v0.2/preflight/tool-call"}`: 3,

		`preflight_http_request_duration_seconds_count{route="/check-request"}`:            6,
		`preflight_http_request_duration_seconds_count{route="/health"}`:                   1,
		`preflight_http_request_duration_seconds_count{route="unmatched"}`:                 1,
		`preflight_http_request_duration_seconds_count{route="/v0.2/preflight/tool-call"}`: 13,

		`preflight_http_requests_in_flight`: 0,

		`preflight_payment_outcomes_total{outcome="challenge_sent"}`:    1,
		`preflight_payment_outcomes_total{outcome="malformed"}`:         1,
		`preflight_payment_outcomes_total{outcome="verify_failed"}`:     1,
		`preflight_payment_outcomes_total{outcome="facilitator_error"}`: 1,
		`preflight_payment_outcomes_total{outcome="verified"}`:          8,
		`preflight_payment_outcomes_total{outcome="settled"}`:           5,
		`preflight_payment_outcomes_total{outcome="settle_failed"}`:     1,
		`preflight_payment_outcomes_total{outcome="outcome_unknown"}`:   2,

		`preflight_facilitator_request_duration_seconds_count{endpoint="verify",result="answered"}`: 10,
		`preflight_facilitator_request_duration_seconds_count{endpoint="settle",result="answered"}`: 8,

		`preflight_mcp_sessions_open`:                                                    0,
		`preflight_mcp_tool_calls_total{result="ok",tool="check_request"}`:               1,
		`preflight_mcp_tool_calls_total{result="ok",tool="preflight_tool_call"}`:         1,
		`preflight_mcp_tool_calls_total{result="tool_error",tool="preflight_tool_call"}`: 1,
	}
	if diff := cmp.Diff(wantCounters, got); diff != "" {
		t.Errorf("metrics after the scripted mix (-want +got):\n%s", diff)
	}
	// Every payment log line carries a request id.
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "x402") && !strings.Contains(line, `"request_id":"`) {
			t.Errorf("payment log line without request_id: %s", line)
		}
	}

	checkWithPromtool(t, scrape(t, reg))
}

// gatherCounters returns every preflight_ counter and gauge, and the count
// of every histogram (as name_count), keyed by name{labels}. Series whose
// route label is skipRoute are left out.
func gatherCounters(t *testing.T, g prometheus.Gatherer, skipRoute string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "preflight_") {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "route" && lp.GetValue() == skipRoute {
					continue series
				}
				labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			sort.Strings(labels)
			key := mf.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[strings.Replace(key, mf.GetName(), mf.GetName()+"_count", 1)] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// scrape returns reg's exposition as a Prometheus server scrapes it.
func scrape(t *testing.T, reg *prometheus.Registry) []byte {
	t.Helper()
	ms := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer ms.Close()
	resp, err := http.Get(ms.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	return b
}

// checkWithPromtool runs promtool check metrics (Debian package prometheus)
// on a scrape. Without promtool it skips, and fails under CI=true, where
// .ci/run installs it.
func checkWithPromtool(t *testing.T, exposition []byte) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool is not installed (Debian package prometheus); the scrape was not linted"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		fmt.Fprintln(os.Stderr, "SKIP lint of the metrics scrape:", msg)
		t.Skip(msg)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
