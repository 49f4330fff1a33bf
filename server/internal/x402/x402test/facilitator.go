// Package x402test provides the one fake x402 facilitator the module's Go
// tests share. A real facilitator needs a chain, which a test cannot reach;
// the official TypeScript facilitator runs against a stubbed chain in
// server/interop/x402 instead.
package x402test

import (
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The payer and transaction the fake reports.
const (
	Payer = "0x857b06519e91e3a54538791bdbb0e22373e36b66"
	Tx    = "0x9f3c5d4f1b2a7e6d8c9b0a1f2e3d4c5b6a79881726354453627181909a8b7c6d"
)

// Facilitator answers /supported, /verify and /settle over HTTP. What it
// answers is set by a mode per endpoint:
//
//	verify: "ok" (the default), "invalid200", "invalid400", "invalid500",
//	        "valid500", "500", "garbage", "longreason", "slow"
//	settle: "ok" (the default), "fail200", "fail400", "500", "garbage",
//	        "nonetwork", "pending", "slow", "slowok" (settles after
//	        SettleDelay even if the caller has gone, as a facilitator that
//	        has broadcast the transfer does), "hugeok", "hugefail",
//	        "hugepending" (answers carrying HugeMessage as errorMessage)
//
// A call whose authorization nonce carries the script (see [Nonce])
// "<verify>/<settle>-anything" uses those two modes instead (an empty part
// keeps the default), so one fake can serve requests that should fail in
// different ways. Like the USDC contract, it accepts each nonce once,
// whatever the letter case of its hex digits: verify refuses a nonce
// settled before. It counts the calls and records what each call carried.
type Facilitator struct {
	URL string

	// VerifyDelay holds every /verify call this long before it answers.
	VerifyDelay time.Duration
	// SettleDelay is how long a "slowok" settle takes.
	SettleDelay time.Duration

	t                      testing.TB
	verifyMode, settleMode string
	settled, dropped       int // "slowok" answers to a caller still waiting / already gone

	mu       sync.Mutex
	verifies int
	settles  int
	used     map[string]bool // settled nonces
	reqs     []json.RawMessage
	versions []int
}

// HugeMessage is a 60,000-byte facilitator errorMessage.
var HugeMessage = strings.Repeat("facilitator says: ", 3333) + "end!!!"

// SlowSettles returns how many "slowok" settle calls were answered to a
// caller still waiting, and how many found their caller gone.
func (f *Facilitator) SlowSettles() (settled, dropped int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.settled, f.dropped
}

// New starts a fake facilitator with the given default modes ("" means
// "ok"); it stops when the test ends.
func New(t testing.TB, verifyMode, settleMode string) *Facilitator {
	t.Helper()
	f := &Facilitator{t: t, verifyMode: verifyMode, settleMode: settleMode, used: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Counts returns how many /verify and /settle calls arrived.
func (f *Facilitator) Counts() (verifies, settles int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verifies, f.settles
}

// Requirements returns the paymentRequirements of every /verify and
// /settle call, in order, as sent.
func (f *Facilitator) Requirements() []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]json.RawMessage(nil), f.reqs...)
}

// Versions returns the x402Version of every /verify and /settle call.
func (f *Facilitator) Versions() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.versions...)
}

// ClosedURL returns an http URL on 127.0.0.1 where nothing listens: a
// facilitator that is down.
func ClosedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

type call struct {
	X402Version    int `json:"x402Version"`
	PaymentPayload struct {
		Payload struct {
			Authorization struct {
				Nonce string `json:"nonce"`
			} `json:"authorization"`
		} `json:"payload"`
	} `json:"paymentPayload"`
	PaymentRequirements json.RawMessage `json:"paymentRequirements"`
}

// modes returns the verify and settle modes of a call with nonce.
func (f *Facilitator) modes(nonce string) (verify, settle string) {
	verify, settle = f.verifyMode, f.settleMode
	if pair, _, ok := strings.Cut(nonce, "-"); ok {
		if v, s, ok := strings.Cut(pair, "/"); ok {
			if v != "" {
				verify = v
			}
			if s != "" {
				settle = s
			}
		}
	}
	return verify, settle
}

func (f *Facilitator) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/supported" {
		w.Write([]byte(`{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"}],"extensions":[],"signers":{"eip155:*":["0x1111111111111111111111111111111111111111"]}}`))
		return
	}
	var c call
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
		f.t.Errorf("fake facilitator: undecodable %s body: %v", r.URL.Path, err)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	nonce := strings.ToLower(c.PaymentPayload.Payload.Authorization.Nonce)
	verifyMode, settleMode := f.modes(Script(nonce))
	f.mu.Lock()
	f.reqs = append(f.reqs, c.PaymentRequirements)
	f.versions = append(f.versions, c.X402Version)
	var mode string
	switch r.URL.Path {
	case "/verify":
		f.verifies++
		mode = verifyMode
		if (mode == "" || mode == "ok") && f.used[nonce] {
			mode = "replayed"
		}
	case "/settle":
		f.settles++
		mode = settleMode
		if mode == "" || mode == "ok" {
			f.used[nonce] = true
		}
	}
	f.mu.Unlock()

	if r.URL.Path == "/verify" {
		time.Sleep(f.VerifyDelay)
	}
	reply := func(status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
	switch r.URL.Path + " " + mode {
	case "/verify ", "/verify ok":
		reply(200, `{"isValid":true,"payer":"`+Payer+`"}`)
	case "/verify replayed":
		reply(200, `{"isValid":false,"invalidReason":"invalid_exact_evm_nonce_already_used","payer":"`+Payer+`"}`)
	case "/verify invalid200":
		reply(200, `{"isValid":false,"invalidReason":"invalid_exact_evm_signature","payer":"`+Payer+`"}`)
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
		<-r.Context().Done() // held until the caller gives up
	case "/settle slowok":
		time.Sleep(f.SettleDelay)
		f.mu.Lock()
		if r.Context().Err() != nil {
			f.dropped++
		} else {
			f.settled++
		}
		f.mu.Unlock()
		reply(200, `{"success":true,"payer":"`+Payer+`","transaction":"`+Tx+`","network":"eip155:8453"}`)
	case "/settle hugeok":
		reply(200, `{"success":true,"payer":"`+Payer+`","transaction":"`+Tx+`","network":"eip155:8453","errorMessage":"`+HugeMessage+`","extensions":{"note":"`+strings.Repeat("e", 2000)+`"}}`)
	case "/settle hugefail":
		reply(200, `{"success":false,"errorReason":"`+strings.Repeat("r", 1000)+`","errorMessage":"`+HugeMessage+`","transaction":"","network":"eip155:8453"}`)
	case "/settle hugepending":
		reply(200, `{"success":false,"errorReason":"settlement_pending","errorMessage":"`+HugeMessage+`","transaction":"`+Tx+`","network":"eip155:8453","payer":"`+Payer+`"}`)
	case "/settle ", "/settle ok":
		reply(200, `{"success":true,"payer":"`+Payer+`","transaction":"`+Tx+`","network":"eip155:8453"}`)
	case "/settle fail200":
		reply(200, `{"success":false,"errorReason":"invalid_exact_evm_transaction_failed","transaction":"","network":"eip155:8453"}`)
	case "/settle fail400":
		reply(400, `{"success":false,"errorReason":"invalid_exact_evm_payload_authorization_valid_before"}`)
	case "/settle pending":
		reply(200, `{"success":false,"errorReason":"settlement_pending","errorMessage":"receipt wait timed out","transaction":"`+Tx+`","network":"eip155:8453","payer":"`+Payer+`"}`)
	case "/verify longreason":
		reply(200, `{"isValid":false,"invalidReason":"a`+strings.Repeat("é", 100)+`"}`)
	case "/settle nonetwork":
		reply(200, `{"success":true,"transaction":"`+Tx+`"}`)
	default:
		f.t.Errorf("fake facilitator: no behaviour for %s mode %q", r.URL.Path, mode)
		http.Error(w, "unknown", http.StatusInternalServerError)
	}
}

// Nonce returns an EIP-3009 nonce (0x and 64 hex digits) that carries
// script for a fake facilitator: its bytes, then zero bytes. A script longer
// than 32 bytes is cut. [Script] reads it back.
func Nonce(script string) string {
	var b [32]byte
	copy(b[:], script)
	return "0x" + hex.EncodeToString(b[:])
}

// Script returns the script a [Nonce] carries: the nonce's bytes without
// the zero bytes that end it. A nonce that is not 0x and 64 hex digits
// carries none ("").
func Script(nonce string) string {
	var b [32]byte
	if len(nonce) != 66 || !strings.HasPrefix(nonce, "0x") {
		return ""
	}
	if _, err := hex.Decode(b[:], []byte(nonce[2:])); err != nil {
		return ""
	}
	return strings.TrimRight(string(b[:]), "\x00")
}
