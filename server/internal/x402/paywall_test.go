package x402

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
	"github.com/google/go-cmp/cmp"
)

const (
	testPayTo    = "0x209693bc6afc0c5328ba36faf03c514ef312287c"
	testPayer    = x402test.Payer
	testTx       = x402test.Tx
	testResource = "http://127.0.0.1/v0.2/preflight/tool-call"
	testDecision = `{"decision":"allow"}`
)

// offer is what the paywall must put in every challenge and send to the
// facilitator for the test config on Base mainnet.
var offer = PaymentRequirements{
	Scheme:            "exact",
	Network:           "eip155:8453",
	Amount:            "2000",
	Asset:             "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
	PayTo:             testPayTo,
	MaxTimeoutSeconds: 60,
	Extra:             json.RawMessage(`{"name":"USD Coin","version":"2"}`),
}

// payload returns a well-formed PaymentPayload for offer with the given
// nonce; the signature is not real (the fake facilitator does not check it).
// A nonce that is not 0x and 64 hex digits is taken as a script for the
// fake facilitator and carried by x402test.Nonce.
func payload(nonce string) PaymentPayload {
	if len(nonce) != 66 {
		nonce = x402test.Nonce(nonce)
	}
	return PaymentPayload{
		X402Version: 2,
		Resource:    &ResourceInfo{URL: testResource},
		Accepted:    offer,
		Payload: json.RawMessage(`{"signature":"0x` + strings.Repeat("ab", 65) + `","authorization":{"from":"` + testPayer +
			`","to":"` + testPayTo + `","value":"2000","validAfter":"0","validBefore":"9999999999","nonce":"` + nonce + `"}}`),
	}
}

func header(t *testing.T, v any) string {
	t.Helper()
	s, err := EncodeHeader(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func envelope(code preflight.ErrorCode, msg string) string {
	b, _ := json.Marshal(&preflight.Error{Code: code, Message: msg})
	return string(b)
}

func challengeFor(reason string) *PaymentRequired {
	return &PaymentRequired{
		X402Version: 2,
		Error:       reason,
		Resource:    ResourceInfo{URL: testResource, Description: "tool-call decision", MimeType: "application/json"},
		Accepts:     []PaymentRequirements{offer},
	}
}

const (
	msgRequired    = "this route costs $0.002 USDC per settled request; pay with x402 version 2 as described in the PAYMENT-REQUIRED header and retry with PAYMENT-SIGNATURE"
	msgMalformed   = "the PAYMENT-SIGNATURE header is malformed: %s; want padded standard base64 of a JSON PaymentPayload with x402Version 2, an accepted object and a payload object"
	msgVerifyDown  = "the payment facilitator could not verify the payment (unreachable, too slow or an unreadable answer); nothing was charged; try again later"
	msgSettleDown  = "the payment facilitator did not confirm settlement (unreachable, too slow or an unreadable answer), so no decision is returned; do not replay this payment blindly: its outcome is unknown"
	msgMismatchFmt = "the payment's accepted.%s does not match this route's offer; pay the requirements in the PAYMENT-REQUIRED header"
)

func malformed(what string) string {
	return envelope(preflight.ErrorInvalidRequest, strings.Replace(msgMalformed, "%s", what, 1))
}

func mismatched(field string) string {
	return envelope(ErrorPaymentRequired, strings.Replace(msgMismatchFmt, "%s", field, 1))
}

func rejected(reason string) string {
	return envelope(ErrorPaymentRequired, "the payment facilitator rejected the payment: "+reason+"; nothing was charged")
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestHandle(t *testing.T) {
	withAccepted := func(mut func(*PaymentRequirements)) func(*testing.T) string {
		return func(t *testing.T) string {
			p := payload("0x01")
			mut(&p.Accepted)
			return header(t, p)
		}
	}
	good := func(t *testing.T) string { return header(t, payload("0x01")) }
	raw := func(s string) func(*testing.T) string { return func(*testing.T) string { return s } }

	tests := []struct {
		name        string
		verify      string // fake /verify mode
		settle      string // fake /settle mode
		down        bool   // facilitator URL points at a closed port
		short       bool   // 50 ms facilitator timeouts (for "slow")
		sig         func(*testing.T) string
		produceCode int // 0 means 200

		wantStatus   int
		wantBody     string
		wantRequired *PaymentRequired
		wantResponse *SettleResponse
		wantVerifies int
		wantSettles  int
		wantProduced int
	}{
		{
			name:         "no header gets the challenge, free",
			sig:          raw(""),
			wantStatus:   402,
			wantBody:     envelope(ErrorPaymentRequired, msgRequired),
			wantRequired: challengeFor("Payment required"),
		},
		{
			name:       "bad base64 is a malformed payload (400, no facilitator call)",
			sig:        raw("%%%not-base64%%%"),
			wantStatus: 400,
			wantBody:   malformed("header is not padded standard base64 (RFC 4648 §4)"),
		},
		{
			name:       "URL-safe base64 is refused",
			sig:        raw(strings.NewReplacer("+", "-", "/", "_").Replace(b64(`{"x402Version":2,"accepted":{},"payload":{"a":"???>>>"}}`))),
			wantStatus: 400,
			wantBody:   malformed("header is not padded standard base64 (RFC 4648 §4)"),
		},
		{
			name:       "unpadded base64 is refused",
			sig:        raw(strings.TrimRight(b64(`{"x402Version":2}`), "=")),
			wantStatus: 400,
			wantBody:   malformed("header is not padded standard base64 (RFC 4648 §4)"),
		},
		{
			name:       "base64 of something that is not JSON",
			sig:        raw(b64(`"just a string"`)),
			wantStatus: 400,
			wantBody:   malformed("header does not hold a JSON object"),
		},
		{
			name:       "base64 of broken JSON",
			sig:        raw("eyJ4NDAyVmVyc2lvbiI6"), // {"x402Version":
			wantStatus: 400,
			wantBody:   malformed("header JSON at /x402Version: expected a JSON value, found end of input"),
		},
		{
			name:       "trailing data after the object",
			sig:        raw(b64(`{"x402Version":2} {}`)),
			wantStatus: 400,
			wantBody:   malformed("header JSON has data after the object"),
		},
		{
			name: "version 1 payload",
			sig: func(t *testing.T) string {
				p := payload("0x01")
				p.X402Version = 1
				return header(t, p)
			},
			wantStatus: 400,
			wantBody:   malformed("x402Version is not 2"),
		},
		{
			name:       "missing version",
			sig:        raw(b64(`{"accepted":{},"payload":{}}`)),
			wantStatus: 400,
			wantBody:   malformed("x402Version is not 2"),
		},
		{
			name:       "missing accepted",
			sig:        raw(b64(`{"x402Version":2,"payload":{}}`)),
			wantStatus: 400,
			wantBody:   malformed("accepted is not an object"),
		},
		{
			name:       "payload not an object",
			sig:        raw(b64(`{"x402Version":2,"accepted":{},"payload":"0xsig"}`)),
			wantStatus: 400,
			wantBody:   malformed("payload is not an object"),
		},
		{
			name:       "accepted with a wrongly typed member",
			sig:        raw(b64(`{"x402Version":2,"accepted":{"amount":2000},"payload":{}}`)),
			wantStatus: 400,
			wantBody:   malformed("accepted.amount is a JSON number; want a JSON string"),
		},
		{
			name:         "accepted scheme differs",
			sig:          withAccepted(func(a *PaymentRequirements) { a.Scheme = "upto" }),
			wantStatus:   402,
			wantBody:     mismatched("scheme"),
			wantRequired: challengeFor("No matching payment requirements"),
		},
		{
			name:         "accepted network differs (Base Sepolia)",
			sig:          withAccepted(func(a *PaymentRequirements) { a.Network = "eip155:84532" }),
			wantStatus:   402,
			wantBody:     mismatched("network"),
			wantRequired: challengeFor("No matching payment requirements"),
		},
		{
			name:         "accepted amount differs",
			sig:          withAccepted(func(a *PaymentRequirements) { a.Amount = "200" }),
			wantStatus:   402,
			wantBody:     mismatched("amount"),
			wantRequired: challengeFor("No matching payment requirements"),
		},
		{
			name:         "accepted asset differs (Sepolia USDC)",
			sig:          withAccepted(func(a *PaymentRequirements) { a.Asset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" }),
			wantStatus:   402,
			wantBody:     mismatched("asset"),
			wantRequired: challengeFor("No matching payment requirements"),
		},
		{
			name:         "accepted payTo differs",
			sig:          withAccepted(func(a *PaymentRequirements) { a.PayTo = "0x1111111111111111111111111111111111111111" }),
			wantStatus:   402,
			wantBody:     mismatched("payTo"),
			wantRequired: challengeFor("No matching payment requirements"),
		},
		{
			name: "payTo in another letter case still matches and is paid",
			sig: withAccepted(func(a *PaymentRequirements) {
				a.PayTo = "0x" + strings.ToUpper(testPayTo[2:])
			}),
			wantStatus:   200,
			wantBody:     testDecision,
			wantResponse: &SettleResponse{Success: true, Payer: testPayer, Transaction: testTx, Network: "eip155:8453"},
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
		{
			name:         "paid decision",
			sig:          good,
			wantStatus:   200,
			wantBody:     testDecision,
			wantResponse: &SettleResponse{Success: true, Payer: testPayer, Transaction: testTx, Network: "eip155:8453"},
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
		{
			name:       "facilitator down (closed port)",
			down:       true,
			sig:        good,
			wantStatus: 503,
			wantBody:   envelope(ErrorPaymentUnavailable, msgVerifyDown),
		},
		{
			name:         "verify too slow",
			verify:       "slow",
			short:        true,
			sig:          good,
			wantStatus:   503,
			wantBody:     envelope(ErrorPaymentUnavailable, msgVerifyDown),
			wantVerifies: 1,
		},
		{
			name:         "verify HTTP 500 without a verdict",
			verify:       "500",
			sig:          good,
			wantStatus:   503,
			wantBody:     envelope(ErrorPaymentUnavailable, msgVerifyDown),
			wantVerifies: 1,
		},
		{
			name:         "verify HTTP 200 with garbage",
			verify:       "garbage",
			sig:          good,
			wantStatus:   503,
			wantBody:     envelope(ErrorPaymentUnavailable, msgVerifyDown),
			wantVerifies: 1,
		},
		{
			name:         "verify says valid but with HTTP 500: not trusted",
			verify:       "valid500",
			sig:          good,
			wantStatus:   503,
			wantBody:     envelope(ErrorPaymentUnavailable, msgVerifyDown),
			wantVerifies: 1,
		},
		{
			name:         "isValid false with HTTP 200",
			verify:       "invalid200",
			sig:          good,
			wantStatus:   402,
			wantBody:     rejected("invalid_exact_evm_signature"),
			wantRequired: challengeFor("invalid_exact_evm_signature"),
			wantVerifies: 1,
		},
		{
			name:         "isValid false with HTTP 400",
			verify:       "invalid400",
			sig:          good,
			wantStatus:   402,
			wantBody:     rejected("invalid_exact_evm_insufficient_balance"),
			wantRequired: challengeFor("invalid_exact_evm_insufficient_balance"),
			wantVerifies: 1,
		},
		{
			name:         "isValid false with HTTP 500 (Go facilitator style)",
			verify:       "invalid500",
			sig:          good,
			wantStatus:   402,
			wantBody:     rejected("invalid_exact_evm_payload_authorization_valid_before"),
			wantRequired: challengeFor("invalid_exact_evm_payload_authorization_valid_before"),
			wantVerifies: 1,
		},
		{
			name:         "produce answers 400: passed through, never settled",
			sig:          good,
			produceCode:  400,
			wantStatus:   400,
			wantBody:     envelope(preflight.ErrorInvalidRequest, "late input error"),
			wantVerifies: 1, wantProduced: 1,
		},
		{
			name:       "settle refused (success false, HTTP 200): 402, no decision",
			settle:     "fail200",
			sig:        good,
			wantStatus: 402,
			wantBody: envelope(ErrorPaymentRequired,
				"settlement failed (invalid_exact_evm_transaction_failed), so no decision is returned and nothing was charged; see PAYMENT-RESPONSE"),
			wantRequired: challengeFor("invalid_exact_evm_transaction_failed"),
			wantResponse: &SettleResponse{Success: false, ErrorReason: "invalid_exact_evm_transaction_failed", Payer: testPayer, Network: "eip155:8453"},
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
		{
			name:       "settle refused with HTTP 400 and no network: filled in",
			settle:     "fail400",
			sig:        good,
			wantStatus: 402,
			wantBody: envelope(ErrorPaymentRequired,
				"settlement failed (invalid_exact_evm_payload_authorization_valid_before), so no decision is returned and nothing was charged; see PAYMENT-RESPONSE"),
			wantRequired: challengeFor("invalid_exact_evm_payload_authorization_valid_before"),
			wantResponse: &SettleResponse{Success: false, ErrorReason: "invalid_exact_evm_payload_authorization_valid_before", Payer: testPayer, Network: "eip155:8453"},
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
		{
			name:         "settle garbage: 503, no decision",
			settle:       "garbage",
			sig:          good,
			wantStatus:   503,
			wantBody:     envelope(ErrorPaymentUnavailable, msgSettleDown),
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
		{
			name:         "settle success without network is garbage",
			settle:       "nonetwork",
			sig:          good,
			wantStatus:   503,
			wantBody:     envelope(ErrorPaymentUnavailable, msgSettleDown),
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
		{
			name:         "settle HTTP 500",
			settle:       "500",
			sig:          good,
			wantStatus:   503,
			wantBody:     envelope(ErrorPaymentUnavailable, msgSettleDown),
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
		{
			name:       "settle pending (broadcast, unconfirmed): 503, receipt passed on, no decision",
			settle:     "pending",
			sig:        good,
			wantStatus: 503,
			wantBody: envelope(ErrorPaymentUnavailable,
				"settlement was submitted but not confirmed, so no decision is returned; the PAYMENT-RESPONSE header names the transaction; do not replay this payment blindly: its outcome is unknown"),
			wantResponse: &SettleResponse{Success: false, ErrorReason: "settlement_pending", ErrorMessage: "receipt wait timed out", Payer: testPayer, Transaction: testTx, Network: "eip155:8453"},
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
		{
			name:         "a long facilitator reason is clipped like every echoed text (64 bytes on a rune boundary, then …)",
			verify:       "longreason",
			sig:          good,
			wantStatus:   402,
			wantBody:     rejected("a" + strings.Repeat("é", 31) + "…"),
			wantRequired: challengeFor("a" + strings.Repeat("é", 31) + "…"),
			wantVerifies: 1,
		},
		{
			name:         "settle too slow",
			settle:       "slow",
			short:        true,
			sig:          good,
			wantStatus:   503,
			wantBody:     envelope(ErrorPaymentUnavailable, msgSettleDown),
			wantVerifies: 1, wantSettles: 1, wantProduced: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fac := x402test.New(t, tc.verify, tc.settle)
			cfg := testConfig(fac.URL)
			if tc.down {
				cfg.FacilitatorURL = x402test.ClosedURL(t)
			}
			if tc.short {
				cfg.VerifyTimeout = 50 * time.Millisecond
				cfg.SettleTimeout = 50 * time.Millisecond
			}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			produced := 0
			produce := func() (int, []byte) {
				produced++
				if tc.produceCode != 0 {
					return tc.produceCode, []byte(envelope(preflight.ErrorInvalidRequest, "late input error"))
				}
				return 200, []byte(testDecision)
			}
			got := serve(t, p, tc.sig(t), produce)

			if got.status != tc.wantStatus {
				t.Errorf("status = %d, want %d", got.status, tc.wantStatus)
			}
			if diff := cmp.Diff(tc.wantBody, got.body); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRequired, got.required); diff != "" {
				t.Errorf("PAYMENT-REQUIRED mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantResponse, got.response); diff != "" {
				t.Errorf("PAYMENT-RESPONSE mismatch (-want +got):\n%s", diff)
			}
			if got.contentType != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got.contentType)
			}
			verifies, settles := fac.Counts()
			if diff := cmp.Diff([3]int{tc.wantVerifies, tc.wantSettles, tc.wantProduced}, [3]int{verifies, settles, produced}); diff != "" {
				t.Errorf("calls [verify settle produce] mismatch (-want +got):\n%s", diff)
			}
			// Whatever the client put in accepted, the facilitator only ever
			// sees this paywall's own requirements.
			versions := fac.Versions()
			for i, r := range sentRequirements(t, fac) {
				if diff := cmp.Diff(offer, r); diff != "" {
					t.Errorf("facilitator call %d got requirements (-want +got):\n%s", i, diff)
				}
				if versions[i] != 2 {
					t.Errorf("facilitator call %d x402Version = %d, want 2", i, versions[i])
				}
			}
		})
	}
}

// sentRequirements decodes the requirements fac was sent, call by call.
func sentRequirements(t *testing.T, fac *x402test.Facilitator) []PaymentRequirements {
	t.Helper()
	var out []PaymentRequirements
	for _, raw := range fac.Requirements() {
		var r PaymentRequirements
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("facilitator was sent requirements that do not decode: %v", err)
		}
		out = append(out, r)
	}
	return out
}

func testConfig(facilitatorURL string) Config {
	return Config{PayTo: testPayTo, FacilitatorURL: facilitatorURL, Description: "tool-call decision"}
}

type result struct {
	status      int
	body        string
	contentType string
	required    *PaymentRequired
	response    *SettleResponse
}

// serve runs one request through p.Handle and decodes the x402 headers.
func serve(t *testing.T, p *Paywall, sig string, produce func() (int, []byte)) result {
	t.Helper()
	return serveRequest(t, p, httptest.NewRequest(http.MethodPost, testResource, strings.NewReader(`{}`)), sig, produce)
}

// requestWithValue is a test request whose context holds key: value.
func requestWithValue(key, value any) *http.Request {
	req := httptest.NewRequest(http.MethodPost, testResource, strings.NewReader(`{}`))
	return req.WithContext(context.WithValue(req.Context(), key, value))
}

// serveRequest is serve with the caller's request.
func serveRequest(t *testing.T, p *Paywall, req *http.Request, sig string, produce func() (int, []byte)) result {
	t.Helper()
	if sig != "" {
		req.Header.Set("Payment-Signature", sig) // any letter case works
	}
	rec := httptest.NewRecorder()
	p.Handle(rec, req, testResource, produce)
	res := rec.Result()
	got := result{status: res.StatusCode, body: rec.Body.String(), contentType: res.Header.Get("Content-Type")}
	if h := res.Header.Get("PAYMENT-REQUIRED"); h != "" {
		got.required = new(PaymentRequired)
		if err := DecodeHeader(h, got.required); err != nil {
			t.Fatalf("PAYMENT-REQUIRED undecodable: %v", err)
		}
	}
	if h := res.Header.Get("PAYMENT-RESPONSE"); h != "" {
		got.response = new(SettleResponse)
		if err := DecodeHeader(h, got.response); err != nil {
			t.Fatalf("PAYMENT-RESPONSE undecodable: %v", err)
		}
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	return got
}

// TestHandleReplay sends one signed payment twice. The fake facilitator,
// like the USDC contract, accepts each nonce once, so the second request is
// refused at verification: one settlement, one decision.
func TestHandleReplay(t *testing.T) {
	fac := x402test.New(t, "", "")
	p, err := New(testConfig(fac.URL))
	if err != nil {
		t.Fatal(err)
	}
	sig := header(t, payload("0x"+strings.Repeat("7", 64)))
	produced := 0
	produce := func() (int, []byte) { produced++; return 200, []byte(testDecision) }

	first := serve(t, p, sig, produce)
	second := serve(t, p, sig, produce)
	if first.status != 200 || second.status != 402 {
		t.Fatalf("statuses = %d, %d; want 200, 402", first.status, second.status)
	}
	if diff := cmp.Diff(rejected("invalid_exact_evm_nonce_already_used"), second.body); diff != "" {
		t.Errorf("replay body (-want +got):\n%s", diff)
	}
	verifies, settles := fac.Counts()
	if diff := cmp.Diff([3]int{2, 1, 1}, [3]int{verifies, settles, produced}); diff != "" {
		t.Errorf("calls [verify settle produce] (-want +got):\n%s", diff)
	}
}

// TestHandleInFlight sends the same payment while the first request with it
// is still producing its answer: the second never reaches the facilitator.
func TestHandleInFlight(t *testing.T) {
	fac := x402test.New(t, "", "")
	p, err := New(testConfig(fac.URL))
	if err != nil {
		t.Fatal(err)
	}
	sig := header(t, payload("0x02"))
	var second result
	produce := func() (int, []byte) {
		second = serve(t, p, sig, func() (int, []byte) {
			t.Error("the duplicate's produce ran")
			return 200, nil
		})
		return 200, []byte(testDecision)
	}
	first := serve(t, p, sig, produce)
	if first.status != 200 {
		t.Errorf("first status = %d, want 200", first.status)
	}
	want := envelope(ErrorPaymentRequired, "this payment is already being processed by another request; it is never used twice")
	if diff := cmp.Diff(want, second.body); diff != "" {
		t.Errorf("duplicate body (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(challengeFor("payment_already_in_progress"), second.required); diff != "" {
		t.Errorf("duplicate challenge (-want +got):\n%s", diff)
	}
	verifies, settles := fac.Counts()
	if verifies != 1 || settles != 1 {
		t.Errorf("verifies, settles = %d, %d; want 1, 1", verifies, settles)
	}
}

// TestHandleClientOffer checks that the facilitator is sent the paywall's
// own requirements even when the client's accepted copy carries a longer
// window and another EIP-712 domain.
func TestHandleClientOffer(t *testing.T) {
	fac := x402test.New(t, "", "")
	p, err := New(testConfig(fac.URL))
	if err != nil {
		t.Fatal(err)
	}
	pl := payload("0x03")
	pl.Accepted.MaxTimeoutSeconds = 99999
	pl.Accepted.Extra = json.RawMessage(`{"name":"Evil Coin","version":"9"}`)
	got := serve(t, p, header(t, pl), func() (int, []byte) { return 200, []byte(testDecision) })
	if got.status != 200 {
		t.Fatalf("status = %d, want 200", got.status)
	}
	if diff := cmp.Diff([]PaymentRequirements{offer, offer}, sentRequirements(t, fac)); diff != "" {
		t.Errorf("requirements sent (-want +got):\n%s", diff)
	}
}

func TestHandleDefaultResourceURL(t *testing.T) {
	p, err := New(testConfig("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "http://example.test/v0.2/preflight/tool-call?x=1", nil)
	rec := httptest.NewRecorder()
	p.Handle(rec, req, "", func() (int, []byte) { t.Error("produce ran"); return 200, nil })
	var pr PaymentRequired
	if err := DecodeHeader(rec.Header().Get("Payment-Required"), &pr); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("http://example.test/v0.2/preflight/tool-call?x=1", pr.Resource.URL); diff != "" {
		t.Errorf("resource.url (-want +got):\n%s", diff)
	}
}

func TestRequirementsSepolia(t *testing.T) {
	cfg := testConfig("https://facilitator.example")
	cfg.Network = NetworkBaseSepolia
	cfg.MaxTimeoutSeconds = 120
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := PaymentRequirements{
		Scheme: "exact", Network: "eip155:84532", Amount: "2000",
		Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", PayTo: testPayTo,
		MaxTimeoutSeconds: 120, Extra: json.RawMessage(`{"name":"USDC","version":"2"}`),
	}
	if diff := cmp.Diff(want, p.Requirements()); diff != "" {
		t.Errorf("Requirements() (-want +got):\n%s", diff)
	}
}
