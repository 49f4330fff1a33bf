package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/x402"
	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
)

// Secret markers: none may ever appear in a log line.
const (
	markAuth      = "auth-marker-5d1e0c"
	markCookie    = "cookie-marker-a94b27"
	markBody      = "body-marker-3f6e88"
	markSignature = "signature-marker-c07d41"
	markQuery     = "query-marker-18aa9f"
)

var allMarkers = []string{markAuth, markCookie, markBody, markSignature, markQuery}

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// paidConfig is testConfig with payment through the facilitator at url.
func paidConfig(url string, logger *slog.Logger) Config {
	cfg := testConfig
	cfg.Logger = logger
	cfg.Payment = &Payment{PayTo: "0x1111111111111111111111111111111111111111", FacilitatorURL: url}
	return cfg
}

// paymentSignature returns a PAYMENT-SIGNATURE value that matches the offer
// of cfg and carries nonce and note (any text) in its payload. It is shaped
// like an EIP-3009 authorization but signed by nobody: only a facilitator
// would check the signature. A nonce that is not 0x and 64 hex digits is a
// script for the fake facilitators, carried by x402test.Nonce (the paywall
// refuses any other nonce). It is safe to call from any goroutine; a
// failure panics, which fails the test.
func paymentSignature(cfg *Payment, nonce, note string) string {
	if len(nonce) != 66 {
		nonce = x402test.Nonce(nonce)
	}
	pw, err := x402.New(cfg.config(nil))
	if err != nil {
		panic(err)
	}
	payload, _ := json.Marshal(map[string]any{
		"signature": "0x" + strings.Repeat("cd", 65),
		"note":      note,
		"authorization": map[string]string{
			"from": "0x2222222222222222222222222222222222222222", "to": cfg.PayTo,
			"value": x402.PriceAmount, "validAfter": "0", "validBefore": "9999999999", "nonce": nonce,
		},
	})
	sig, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: pw.Requirements(), Payload: payload})
	if err != nil {
		panic(err)
	}
	return sig
}

// TestLogsHoldNoSecrets runs requests carrying secrets in every place a
// client can put one (Authorization, Cookie, the query string, the body,
// the proposed request's own headers, the payment signature, a malformed
// payment signature) through the paid handler, with the facilitator
// settling, refusing, failing and unreachable, and searches everything the
// handler logged for the markers. The binary's access log is checked the
// same way in cmd/preflightd.
func TestLogsHoldNoSecrets(t *testing.T) {
	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fac := x402test.New(t, "", "")

	downURL := x402test.ClosedURL(t) // the facilitator is down

	for _, facURL := range []string{fac.URL, downURL} {
		cfg := paidConfig(facURL, logger)
		ts := httptest.NewServer(New(cfg))
		secretCheck := strings.Replace(checkValid, `"A-1"`, `"`+markBody+`"`, 1)
		secretCheck = strings.Replace(secretCheck, `"headers":{`, `"headers":{"Authorization":"Bearer `+markAuth+`",`, 1)
		secretTool := strings.Replace(toolAllow, "preflight checks for agents", markBody, 1)
		type req struct{ method, path, body, sig string }
		reqs := []req{
			{"POST", "/check-request", secretCheck, ""},
			{"POST", "/check-request", `{"request":{"method":"POST","url":"https://a.example/?k=` + markQuery + `","body":"` + markBody + `"},"schema":{"type":"integer"}}`, ""},
			{"POST", "/check-request", `{"request":"` + markBody, ""},
			{"POST", "/v0.2/preflight/tool-call", secretTool, ""},
			{"POST", "/v0.2/preflight/tool-call", `{"runId":"` + markBody + `"`, ""},
			{"POST", "/v0.2/preflight/tool-call", secretTool, "not base64 " + markSignature},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_request","arguments":` + secretCheck + `}}`, ""},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"preflight_tool_call","arguments":{"runId":"` + markBody + `"}}}`, ""},
			{"POST", "/mcp", `{"not":"` + markBody + `"}`, ""},
			{"GET", "/health?token=" + markQuery, "", ""},
			{"GET", "/nope/" + markQuery, "", ""},
			{"POST", "/v0.2/usage/dump", markBody, ""},
		}
		// Nonces "<verify>/<settle>-..." pick the facilitator's answers:
		// settled, refused, broken, and verified but not settled.
		for _, mode := range []string{"ok/ok", "invalid200/", "500/500", "/fail200"} {
			reqs = append(reqs, req{"POST", "/v0.2/preflight/tool-call", secretTool,
				paymentSignature(cfg.Payment, mode+"-"+markSignature, markSignature)})
		}
		for _, r := range reqs {
			hr, _ := http.NewRequest(r.method, ts.URL+r.path, strings.NewReader(r.body))
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Accept", "application/json, text/event-stream")
			hr.Header.Set("Authorization", "Bearer "+markAuth)
			hr.Header.Set("Cookie", "session="+markCookie)
			if r.sig != "" {
				hr.Header.Set(x402.HeaderPaymentSignature, r.sig)
			}
			resp, err := ts.Client().Do(hr)
			if err != nil {
				t.Fatalf("%s %s: %v", r.method, r.path, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 && resp.StatusCode != 503 {
				t.Errorf("%s %s: status %d", r.method, r.path, resp.StatusCode)
			}
		}
		ts.Close()
	}
	out := logs.String()
	if !strings.Contains(out, "x402") {
		t.Errorf("the payment failures were not logged at all; the search below would prove nothing:\n%s", out)
	}
	for _, m := range allMarkers {
		if strings.Contains(out, m) {
			t.Errorf("the logs contain the secret marker %q:\n%s", m, out)
		}
	}
	t.Logf("%d log lines searched", strings.Count(out, "\n"))
}

// TestMCPNeverConnects extends TestNeverConnects to the MCP tools: tool
// calls that name loopback URLs (as the proposed request's URL, a browse
// payload, a result reference) open no connection to them.
func TestMCPNeverConnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	target := "http://" + ln.Addr().String()
	ts := httptest.NewServer(New(testConfig))
	defer ts.Close()
	for i, args := range []struct{ tool, args string }{
		{"check_request", `{"request":{"method":"POST","url":"` + target + `/orders","headers":{"Referer":"` + target + `/r"},"body":{"callback":"` + target + `/cb"}},"schema":{"type":"object"}}`},
		{"preflight_tool_call", `{"runId":"r","stepId":"s","tool":{"provider":"browse","operation":"fetch","request":{"url":"` + target + `/page"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`},
		{"preflight_tool_call", `{"runId":"r","stepId":"s","tool":{"provider":"browse","operation":"browse:fetch","request":{"url":"` + target + `/page"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1},"task":{"goalHash":"g"},"capabilities":{"canReusePriorResult":true,"canReduceScope":true},"freshnessTtlSeconds":5,"history":[{"toolCallId":"c","fingerprint":"00","outcome":"success","resultReference":"` + target + `/r","ageSeconds":1,"goalHash":"g"}]}`},
	} {
		msg := `{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"tools/call","params":{"name":"` + args.tool + `","arguments":` + args.args + `}}`
		status, _, body := mcpPost(t, ts, nil, msg)
		if status != 200 || mcpWireResult(t, body).IsError {
			t.Fatalf("%s: %d %s", args.tool, status, body)
		}
	}
	if seen := connectionsBefore(t, ln); seen != 0 {
		t.Errorf("the MCP tools opened %d connection(s) to URLs they were given; want 0", seen)
	}
}
