package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server"
	"github.com/agentpreflight/preflight/server/internal/x402"
	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
	"github.com/google/go-cmp/cmp"
)

// slowFacilitator stands in for an x402 facilitator (a real one needs a
// chain): it verifies every payment and settles it after settleDelay,
// announcing on settling when a /settle call arrives.
type slowFacilitator struct {
	srv         *httptest.Server
	settleDelay time.Duration
	settling    chan struct{}
	settled     chan struct{}
	verifies    atomic.Int32
}

func newSlowFacilitator(t *testing.T, settleDelay time.Duration) *slowFacilitator {
	t.Helper()
	f := &slowFacilitator{settleDelay: settleDelay, settling: make(chan struct{}, 1), settled: make(chan struct{}, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		const payer = `"payer":"0x2222222222222222222222222222222222222222"`
		if r.URL.Path == "/verify" {
			f.verifies.Add(1)
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
	return testPaymentSignatureNonce(t, facilitatorURL, "0x"+strings.Repeat("0", 62)+"01")
}

// testPaymentSignatureNonce is testPaymentSignature with the authorization
// nonce given: 0x and 64 hex digits, as the scheme wants (x402test.Nonce
// makes one that carries a word).
func testPaymentSignatureNonce(t *testing.T, facilitatorURL, nonce string) string {
	pw, err := x402.New(x402.Config{PayTo: testPayTo, FacilitatorURL: facilitatorURL})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{
		"signature":     "0x" + strings.Repeat("cd", 65),
		"authorization": map[string]string{"from": "0x2222222222222222222222222222222222222222", "to": testPayTo, "value": x402.PriceAmount, "nonce": nonce},
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

// TestSIGTERMBeforeVerification starts the real binary with payment and
// sends SIGTERM while a paid request's body is still arriving: the request
// has not been verified when shutdown begins, so it must be refused with
// 503 server_busy and Retry-After before the facilitator is asked anything
// (a settlement it started could outlast --shutdown-timeout), and the
// process must exit 0.
func TestSIGTERMBeforeVerification(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	fac := newSlowFacilitator(t, 0)
	d := startDaemon(t, buildBinary(t), "--pay-to", testPayTo, "--facilitator-url", fac.srv.URL)

	conn, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	head := "POST /v0.2/preflight/tool-call HTTP/1.1\r\nHost: " + d.addr + "\r\nContent-Type: application/json\r\n" +
		x402.HeaderPaymentSignature + ": " + testPaymentSignature(t, fac.srv.URL) + "\r\n" +
		"X-Request-Id: shutdown-test-2\r\nExpect: 100-continue\r\nContent-Length: " + itoa(len(e2eToolAllow)) + "\r\n\r\n"
	d.sigtermMidBody(t, conn, br, head, e2eToolAllow)
	if _, err := io.WriteString(conn, e2eToolAllow[20:]); err != nil {
		t.Fatalf("finishing the body: %v", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("paid request whose body arrived during shutdown: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), `"code":"server_busy"`) || resp.Header.Get("Retry-After") == "" {
		t.Errorf("answer %d, Retry-After %q, %s; want 503 server_busy with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if n := fac.verifies.Load(); n != 0 {
		t.Errorf("the facilitator was asked to verify %d times after shutdown began; want 0", n)
	}
	d.waitLog(t, "stopped")
	if err := <-d.done; err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// TestShutdownGraceRunsOutMidSettlement serves the real handler with serve
// and a grace far shorter than the facilitator's settlement (which
// preflightd's flag checks never allow, but a stuck write or a library user
// could): when the grace runs out, serve logs the settling payment's
// request id as an unknown outcome, then its own failure, both as JSON
// lines, and returns a reportedError so that main prints nothing more.
// The facilitator is the shared fake (a real one needs a chain).
func TestShutdownGraceRunsOutMidSettlement(t *testing.T) {
	fac := x402test.New(t, "", "slowok")
	fac.SettleDelay = 3 * time.Second
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	drain := &server.Drain{}
	h := server.New(server.Config{
		Payment: &server.Payment{PayTo: testPayTo, FacilitatorURL: fac.URL},
		Logger:  logger,
		Drain:   drain,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, &http.Server{Handler: h}, ln, logger, 200*time.Millisecond, drain.Start, drain.Settling)
	}()

	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v0.2/preflight/tool-call", strings.NewReader(e2eToolAllow))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "grace-test-1")
	req.Header.Set(x402.HeaderPaymentSignature, testPaymentSignature(t, fac.URL))
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); len(drain.Settling()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the paid request never reached settlement")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	err = <-served
	if !errors.As(err, new(reportedError)) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("serve: %v; want a reportedError wrapping context.DeadlineExceeded", err)
	}
	mu.Lock()
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	mu.Unlock()
	var got []map[string]any
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["level"] == "ERROR" {
			delete(m, "time")
			got = append(got, m)
		}
	}
	want := []map[string]any{
		{"level": "ERROR", "msg": "exiting with a payment in settlement, outcome unknown", "request_id": "grace-test-1", "timeout": "200ms"},
		{"level": "ERROR", "msg": "stopped before every request in flight finished", "error": "context deadline exceeded", "timeout": "200ms"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error lines (-want +got):\n%s", diff)
	}
}
