package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net"
	"testing"
)

// TestPaywallMisconfigured: a payment configuration x402.New rejects makes
// the paid route answer 503 payment_unavailable, never serve unpaid, while
// input errors stay a free 400 and the free route is unaffected.
func TestPaywallMisconfigured(t *testing.T) {
	cfg := testConfig
	cfg.Payment = &Payment{PayTo: "not an address", FacilitatorURL: "http://127.0.0.1:1"}
	c := newAPIClient(t, New(cfg))

	x := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow))
	if x.Status != 503 {
		t.Errorf("status %d, want 503: %s", x.Status, x.Body)
	}
	checkGolden(t, "tool_payment_unavailable", x.render())

	if x := c.do("POST", "/v0.2/preflight/tool-call", []byte(`{}`)); x.Status != 400 {
		t.Errorf("invalid input: status %d, want a free 400: %s", x.Status, x.Body)
	}
	if x := c.do("POST", "/check-request", []byte(checkValid)); x.Status != 200 {
		t.Errorf("free route: status %d, want 200", x.Status)
	}
}

// TestPaywallChallenge uses the real x402 paywall with a facilitator address
// that is a loopback listener nobody answers: a request without payment
// gets the 402 challenge (no facilitator call is needed for that), and an
// invalid request gets a free 400 with no challenge.
func TestPaywallChallenge(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := testConfig
	cfg.Payment = &Payment{
		PayTo:          "0x1111111111111111111111111111111111111111",
		FacilitatorURL: "http://" + ln.Addr().String(),
	}
	c := newAPIClient(t, New(cfg))

	x := c.do("POST", "/v0.2/preflight/tool-call", []byte(toolAllow), "Accept: application/json")
	if x.Status != 402 {
		t.Fatalf("status %d, want 402: %s", x.Status, x.Body)
	}
	raw, err := base64.StdEncoding.DecodeString(x.Header.Get("PAYMENT-REQUIRED"))
	if err != nil {
		t.Fatalf("PAYMENT-REQUIRED is not base64: %v", err)
	}
	var challenge struct {
		X402Version int `json:"x402Version"`
		Resource    struct {
			URL string `json:"url"`
		} `json:"resource"`
		Accepts []struct {
			Network string `json:"network"`
			Amount  string `json:"amount"`
			Asset   string `json:"asset"`
		} `json:"accepts"`
	}
	if err := json.Unmarshal(raw, &challenge); err != nil {
		t.Fatalf("challenge: %v", err)
	}
	if challenge.X402Version != 2 || challenge.Resource.URL != "https://api.example.test/v0.2/preflight/tool-call" ||
		len(challenge.Accepts) != 1 || challenge.Accepts[0].Network != "eip155:8453" || challenge.Accepts[0].Amount != "2000" {
		t.Errorf("challenge %s", raw)
	}
	if bytes.Contains(x.Body, []byte(`"decision"`)) {
		t.Errorf("a 402 carries a decision: %s", x.Body)
	}

	bad := c.do("POST", "/v0.2/preflight/tool-call", []byte(`{"runId":1}`))
	if bad.Status != 400 || bad.Header.Get("PAYMENT-REQUIRED") != "" {
		t.Errorf("invalid input: %d, PAYMENT-REQUIRED %q; want a free 400 without challenge", bad.Status, bad.Header.Get("PAYMENT-REQUIRED"))
	}
}
