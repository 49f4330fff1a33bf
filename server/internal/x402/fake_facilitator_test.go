package x402

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeFacilitator stands in for a real x402 facilitator, which would need a
// chain. It answers /verify and /settle according to its modes, counts the
// calls, records the requirements it was sent, and, like the USDC contract,
// accepts each authorization nonce once: verify refuses a nonce that was
// settled before.
type fakeFacilitator struct {
	t testing.TB

	verifyMode string // "ok" (default), "invalid200", "invalid400", "invalid500", "500", "garbage", "valid500", "longreason", "slow"
	settleMode string // "ok" (default), "fail200", "fail400", "500", "garbage", "nonetwork", "pending", "slow"

	mu       sync.Mutex
	verifies int
	settles  int
	used     map[string]bool // settled nonces
	gotReqs  []PaymentRequirements
	versions []int
	srv      *httptest.Server
}

func newFakeFacilitator(t testing.TB, verifyMode, settleMode string) *fakeFacilitator {
	t.Helper()
	f := &fakeFacilitator{t: t, verifyMode: verifyMode, settleMode: settleMode, used: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

type fakeCall struct {
	X402Version    int `json:"x402Version"`
	PaymentPayload struct {
		Payload struct {
			Authorization struct {
				Nonce string `json:"nonce"`
			} `json:"authorization"`
		} `json:"payload"`
	} `json:"paymentPayload"`
	PaymentRequirements PaymentRequirements `json:"paymentRequirements"`
}

func (f *fakeFacilitator) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/supported" {
		w.Write([]byte(`{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"}],"extensions":[],"signers":{"eip155:*":["0x1111111111111111111111111111111111111111"]}}`))
		return
	}
	var call fakeCall
	if err := json.NewDecoder(r.Body).Decode(&call); err != nil {
		f.t.Errorf("fake facilitator: undecodable %s body: %v", r.URL.Path, err)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	nonce := call.PaymentPayload.Payload.Authorization.Nonce
	f.mu.Lock()
	f.gotReqs = append(f.gotReqs, call.PaymentRequirements)
	f.versions = append(f.versions, call.X402Version)
	var mode string
	switch r.URL.Path {
	case "/verify":
		f.verifies++
		mode = f.verifyMode
		if mode == "" || mode == "ok" {
			if f.used[nonce] {
				mode = "replayed"
			}
		}
	case "/settle":
		f.settles++
		mode = f.settleMode
		if (mode == "" || mode == "ok") && !f.used[nonce] {
			f.used[nonce] = true
		}
	}
	f.mu.Unlock()

	reply := func(status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
	switch r.URL.Path + " " + mode {
	case "/verify ", "/verify ok":
		reply(200, `{"isValid":true,"payer":"`+testPayer+`"}`)
	case "/verify replayed":
		reply(200, `{"isValid":false,"invalidReason":"invalid_exact_evm_nonce_already_used","payer":"`+testPayer+`"}`)
	case "/verify invalid200":
		reply(200, `{"isValid":false,"invalidReason":"invalid_exact_evm_signature","payer":"`+testPayer+`"}`)
	case "/verify invalid400":
		reply(400, `{"isValid":false,"invalidReason":"invalid_exact_evm_insufficient_balance"}`)
	case "/verify invalid500":
		reply(500, `{"isValid":false,"invalidReason":"invalid_exact_evm_payload_authorization_valid_before"}`)
	case "/verify valid500":
		reply(500, `{"isValid":true}`)
	case "/verify 500", "/settle 500":
		http.Error(w, "internal error", http.StatusInternalServerError)
	case "/verify garbage", "/settle garbage":
		reply(200, `<html>maintenance</html>`)
	case "/verify slow", "/settle slow":
		<-r.Context().Done() // held until the paywall gives up
	case "/settle ", "/settle ok":
		reply(200, `{"success":true,"payer":"`+testPayer+`","transaction":"`+testTx+`","network":"eip155:8453"}`)
	case "/settle fail200":
		reply(200, `{"success":false,"errorReason":"invalid_exact_evm_transaction_failed","transaction":"","network":"eip155:8453"}`)
	case "/settle fail400":
		reply(400, `{"success":false,"errorReason":"invalid_exact_evm_payload_authorization_valid_before"}`)
	case "/settle pending":
		reply(200, `{"success":false,"errorReason":"settlement_pending","errorMessage":"receipt wait timed out","transaction":"`+testTx+`","network":"eip155:8453","payer":"`+testPayer+`"}`)
	case "/verify longreason":
		reply(200, `{"isValid":false,"invalidReason":"a`+strings.Repeat("é", 100)+`"}`)
	case "/settle nonetwork":
		reply(200, `{"success":true,"transaction":"`+testTx+`"}`)
	default:
		f.t.Errorf("fake facilitator: no behaviour for %s mode %q", r.URL.Path, mode)
		http.Error(w, "unknown", http.StatusInternalServerError)
	}
}

func (f *fakeFacilitator) counts() (verifies, settles int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verifies, f.settles
}

// closedURL returns an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
