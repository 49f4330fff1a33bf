package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
)

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log lines written so far.
func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(s.b.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// paidServer serves p on a real HTTP server, the decision being
// testDecision. Like the reference server it reads the whole body first,
// after which net/http cancels the request's context when the client
// disconnects.
func paidServer(t *testing.T, p *Paywall) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		p.Handle(w, r, testResource, func() (int, []byte) { return 200, []byte(testDecision) })
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestSettlementSurvivesClientLeaving: a client that disconnects one second
// into a three-second settlement must not cancel the settle call (a real
// facilitator settles on chain whatever the paywall does), and the outcome
// must be logged with its transaction.
func TestSettlementSurvivesClientLeaving(t *testing.T) {
	fac := x402test.New(t, "", "slowok")
	fac.SettleDelay = 3 * time.Second
	logs := &syncBuffer{}
	cfg := testConfig(fac.URL)
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := paidServer(t, p)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(`{}`))
	req.Header.Set(HeaderPaymentSignature, header(t, payload("0x"+strings.Repeat("5", 64))))
	if resp, err := ts.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the client got status %d before it gave up; the test needs it to leave first", resp.StatusCode)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client: %v", err)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		var line map[string]any
		for _, l := range logs.lines() {
			if l["msg"] == "x402 settled" || strings.HasPrefix(l["msg"].(string), "x402 settle") {
				line = l
			}
		}
		if line != nil {
			if line["msg"] != "x402 settled" || line["transaction"] != testTx || line["client_gone"] != true {
				t.Errorf("settlement log line %v; want msg \"x402 settled\", transaction %s, client_gone true", line, testTx)
			}
			// The test facilitator leaves the amount out; the log says the
			// offer's, which the exact scheme pays.
			if want := p.Requirements().Amount; want == "" || line["amount"] != want {
				t.Errorf("settlement log line amount %v, want the offer's %q", line["amount"], want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no settlement outcome logged; logs:\n%v", logs.lines())
		}
		time.Sleep(50 * time.Millisecond)
	}
	settled, dropped := fac.SlowSettles()
	if settled != 1 || dropped != 0 {
		t.Errorf("facilitator: %d settle calls completed, %d dropped by the paywall; want 1, 0", settled, dropped)
	}
}

// TestSettlementClientThatStaysGetsReceipt: the same slow settlement with a
// patient client ends in the decision and PAYMENT-RESPONSE.
func TestSettlementClientThatStaysGetsReceipt(t *testing.T) {
	fac := x402test.New(t, "", "slowok")
	fac.SettleDelay = 2 * time.Second
	p, err := New(testConfig(fac.URL))
	if err != nil {
		t.Fatal(err)
	}
	ts := paidServer(t, p)
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{}`))
	req.Header.Set(HeaderPaymentSignature, header(t, payload("0x"+strings.Repeat("6", 64))))
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var sr SettleResponse
	if err := DecodeHeader(resp.Header.Get(HeaderPaymentResponse), &sr); err != nil || resp.StatusCode != 200 || string(body) != testDecision {
		t.Fatalf("status %d, body %s, PAYMENT-RESPONSE error %v", resp.StatusCode, body, err)
	}
	if !sr.Success || sr.Transaction != testTx {
		t.Errorf("receipt %+v", sr)
	}
}

// TestReceiptHeaderBounded: a facilitator answer with a 60,000-byte
// errorMessage (and oversized extensions and reason) gives a PAYMENT-RESPONSE
// within MaxResponseHeaderBytes that Go's and Node's HTTP clients read, on a
// paid 200, a refused settlement and a pending one; the log keeps the whole
// message.
func TestReceiptHeaderBounded(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		status  int
		success bool
	}{
		{"hugeok", 200, true},
		{"hugefail", 402, false},
		{"hugepending", 503, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			fac := x402test.New(t, "", tc.mode)
			logs := &syncBuffer{}
			cfg := testConfig(fac.URL)
			cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ts := paidServer(t, p)
			sig := header(t, payload("0x"+strings.Repeat("8", 64)))

			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{}`))
			req.Header.Set(HeaderPaymentSignature, sig)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			value := resp.Header.Get(HeaderPaymentResponse)
			if resp.StatusCode != tc.status || len(value) == 0 || len(value) > MaxResponseHeaderBytes {
				t.Fatalf("Go client: status %d (want %d), PAYMENT-RESPONSE %d bytes (want 1..%d)", resp.StatusCode, tc.status, len(value), MaxResponseHeaderBytes)
			}
			var sr SettleResponse
			if err := DecodeHeader(value, &sr); err != nil {
				t.Fatal(err)
			}
			if sr.Success != tc.success || !strings.HasPrefix(x402test.HugeMessage, sr.ErrorMessage) {
				t.Errorf("receipt success %v, errorMessage %d bytes; want success %v and a prefix of the facilitator's message", sr.Success, len(sr.ErrorMessage), tc.success)
			}
			logged := false
			for _, l := range logs.lines() {
				if l["facilitator_message"] == x402test.HugeMessage {
					logged = true
				}
			}
			if !logged {
				t.Errorf("the log does not carry the facilitator's full message")
			}

			// The same exchange read by Node's http module, whose default
			// limit for all headers together is 16 KB (the fake facilitator
			// forgets nothing, so the nonce is fresh).
			nodeReads(t, ts.URL, header(t, payload("0x"+strings.Repeat("9", 64))), tc.status)
		})
	}
}

// nodeReads posts to url with sig using Node's http module and checks that
// it reads a response with the wanted status and a PAYMENT-RESPONSE header.
// Without node the check is skipped locally and fails when CI=true.
func nodeReads(t *testing.T, url, sig string, status int) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed; CI needs it for the Node HTTP client check")
		}
		t.Log("skipping the Node HTTP client check: node is not installed")
		return
	}
	const script = `
const http = require('http');
const req = http.request(process.argv[1], {method: 'POST', headers: {'Content-Type': 'application/json', 'PAYMENT-SIGNATURE': process.argv[2]}}, res => {
  res.resume();
  res.on('end', () => console.log(JSON.stringify({status: res.statusCode, len: (res.headers['payment-response'] || '').length})));
});
req.on('error', e => { console.log(JSON.stringify({error: e.code || e.message})); });
req.end('{}');`
	out, err := exec.Command(node, "-e", script, url, sig).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Status int    `json:"status"`
		Len    int    `json:"len"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("node printed %s", out)
	}
	if got.Error != "" || got.Status != status || got.Len == 0 || got.Len > MaxResponseHeaderBytes {
		t.Errorf("Node client: %+v; want status %d and a PAYMENT-RESPONSE of 1..%d bytes", got, status, MaxResponseHeaderBytes)
	}
}

// TestReencodedPaymentsReachFacilitatorOnce sends one payment five times
// at once, each header spelling its JSON differently (whitespace, member
// order, letter case of hex digits): one request is verified and settled,
// the others are refused as already in progress.
func TestReencodedPaymentsReachFacilitatorOnce(t *testing.T) {
	fac := x402test.New(t, "", "")
	fac.VerifyDelay = 500 * time.Millisecond
	p, err := New(testConfig(fac.URL))
	if err != nil {
		t.Fatal(err)
	}
	ts := paidServer(t, p)

	nonce := "0x" + strings.Repeat("ab", 32)
	auth := func(from, nonce string) string {
		return `"authorization":{"from":"` + from + `","to":"` + testPayTo + `","value":"2000","validAfter":"0","validBefore":"9999999999","nonce":"` + nonce + `"}`
	}
	sigField := `"signature":"0x` + strings.Repeat("cd", 65) + `"`
	accepted, _ := json.Marshal(offer)
	encodings := []string{
		`{"x402Version":2,"accepted":` + string(accepted) + `,"payload":{` + sigField + `,` + auth(testPayer, nonce) + `}}`,
		"{ \"x402Version\" : 2 ,\n \"accepted\" : " + string(accepted) + " , \"payload\" : { " + sigField + " , " + auth(testPayer, nonce) + " } }",
		`{"payload":{` + auth(testPayer, nonce) + `,` + sigField + `},"accepted":` + string(accepted) + `,"x402Version":2}`,
		`{"x402Version":2,"accepted":` + string(accepted) + `,"payload":{` + sigField + `,` + auth("0x"+strings.ToUpper(testPayer[2:]), "0x"+strings.ToUpper(nonce[2:])) + `}}`,
		"{\n  \"x402Version\": 2,\n  \"resource\": {\"url\": \"" + testResource + "\"},\n  \"accepted\": " + string(accepted) + ",\n  \"payload\": {" + auth(testPayer, nonce) + ", " + sigField + "}\n}",
	}

	var wg sync.WaitGroup
	statuses := make([]int, len(encodings))
	for i, enc := range encodings {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{}`))
			req.Header.Set(HeaderPaymentSignature, b64(enc))
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	verifies, settles := fac.Counts()
	ok := 0
	for _, s := range statuses {
		if s == 200 {
			ok++
		} else if s != 402 {
			t.Errorf("status %d; want 200 or 402", s)
		}
	}
	if verifies != 1 || settles != 1 || ok != 1 {
		t.Errorf("statuses %v: %d verify and %d settle calls reached the facilitator; want one paid answer, 1 and 1", statuses, verifies, settles)
	}
}

// TestPaymentHeaderStrictJSON: the payment header's JSON follows the rules
// of request bodies.
func TestPaymentHeaderStrictJSON(t *testing.T) {
	accepted, _ := json.Marshal(offer)
	payload := `{"signature":"0x01","authorization":{"from":"` + testPayer + `","nonce":"0x01"}}`
	for name, doc := range map[string]string{
		"duplicate member":        `{"x402Version":2,"x402Version":2,"accepted":` + string(accepted) + `,"payload":` + payload + `}`,
		"case-differing member":   `{"X402VERSION":2,"accepted":` + string(accepted) + `,"payload":` + payload + `}`,
		"case-differing nested":   `{"x402Version":2,"accepted":` + strings.Replace(string(accepted), `"payTo"`, `"PayTo"`, 1) + `,"payload":` + payload + `}`,
		"invalid UTF-8":           `{"x402Version":2,"accepted":` + string(accepted) + `,"payload":` + payload + `,"extensions":{"x":"` + "\xff" + `"}}`,
		"duplicate in extensions": `{"x402Version":2,"accepted":` + string(accepted) + `,"payload":` + payload + `,"extensions":{"a":1,"a":2}}`,
		"data after the object":   `{"x402Version":2,"accepted":` + string(accepted) + `,"payload":` + payload + `} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			var p PaymentPayload
			if err := DecodeHeader(b64(doc), &p); err == nil {
				t.Errorf("accepted %s", doc)
			}
		})
	}
}
