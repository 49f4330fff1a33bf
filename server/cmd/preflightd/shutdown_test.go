package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/x402"
)

// slowFacilitator stands in for an x402 facilitator (a real one needs a
// chain): it verifies every payment and settles it after settleDelay,
// announcing on settling when a /settle call arrives.
type slowFacilitator struct {
	srv         *httptest.Server
	settleDelay time.Duration
	settling    chan struct{}
	settled     chan struct{}
}

func newSlowFacilitator(t *testing.T, settleDelay time.Duration) *slowFacilitator {
	t.Helper()
	f := &slowFacilitator{settleDelay: settleDelay, settling: make(chan struct{}, 1), settled: make(chan struct{}, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		const payer = `"payer":"0x2222222222222222222222222222222222222222"`
		if r.URL.Path == "/verify" {
			io.WriteString(w, `{"isValid":true,`+payer+`}`)
			return
		}
		f.settling <- struct{}{}
		time.Sleep(f.settleDelay)
		io.WriteString(w, `{"success":true,`+payer+`,"transaction":"0x`+strings.Repeat("ab", 32)+`","network":"eip155:8453"}`)
		f.settled <- struct{}{}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// testPaymentSignature returns a PAYMENT-SIGNATURE that matches the offer of
// a paywall paying testPayTo; it is signed by nobody (only a facilitator
// checks signatures).
func testPaymentSignature(t *testing.T, facilitatorURL string) string {
	t.Helper()
	pw, err := x402.New(x402.Config{PayTo: testPayTo, FacilitatorURL: facilitatorURL})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{
		"signature":     "0x" + strings.Repeat("cd", 65),
		"authorization": map[string]string{"from": "0x2222222222222222222222222222222222222222", "to": testPayTo, "value": x402.PriceAmount, "nonce": "0x01"},
	})
	sig, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: pw.Requirements(), Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

const e2eToolAllow = `{"runId":"run-1","stepId":"step-1","tool":{"provider":"search","operation":"web_search","request":{"query":"preflight"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`

// TestSIGTERMDuringSettlement starts the real binary with payment through a
// facilitator that takes 1.5 s to settle, sends SIGTERM while the paid
// request is in settlement, and checks that the request still completes with
// the decision and the settlement receipt, that its settlement line and
// access-log line share the request id the client sent, and that the
// process exits 0.
func TestSIGTERMDuringSettlement(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fac := newSlowFacilitator(t, 1500*time.Millisecond)
	d := startDaemon(t, buildBinary(t), "--pay-to", testPayTo, "--facilitator-url", fac.srv.URL)

	req, _ := http.NewRequest("POST", "http://"+d.addr+"/v0.2/preflight/tool-call", strings.NewReader(e2eToolAllow))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(x402.HeaderPaymentSignature, testPaymentSignature(t, fac.srv.URL))
	req.Header.Set("X-Request-Id", "shutdown-test-1")
	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- answer{resp, b, err}
	}()

	select {
	case <-fac.settling:
	case <-time.After(30 * time.Second):
		t.Fatal("the paid request never reached settlement")
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	shutting := d.waitLog(t, "shutting down")
	select {
	case <-fac.settled:
		t.Fatalf("settlement ended before shutdown began; the test proves nothing: %v", shutting)
	default: // still settling: shutdown must wait for it
	}

	a := <-answered
	if a.err != nil {
		t.Fatalf("paid request during shutdown: %v", a.err)
	}
	if a.resp.StatusCode != 200 || !strings.Contains(string(a.body), `"decision":"allow"`) {
		t.Fatalf("paid request during shutdown: %d %s", a.resp.StatusCode, a.body)
	}
	receipt, err := base64.StdEncoding.DecodeString(a.resp.Header.Get(x402.HeaderPaymentResponse))
	if err != nil || !strings.Contains(string(receipt), `"success":true`) {
		t.Errorf("PAYMENT-RESPONSE %q (%v): want a successful settlement receipt", receipt, err)
	}
	if got := a.resp.Header.Get("X-Request-Id"); got != "shutdown-test-1" {
		t.Errorf("X-Request-Id %q, want the client's", got)
	}
	settled := d.waitLog(t, "x402 settled")
	access := d.waitLog(t, "request")
	if settled["request_id"] != "shutdown-test-1" || access["request_id"] != "shutdown-test-1" || access["status"] != float64(200) {
		t.Errorf("settlement line %v and access line %v: want request_id shutdown-test-1 and status 200", settled, access)
	}
	d.waitLog(t, "stopped")
	if err := <-d.done; err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}
