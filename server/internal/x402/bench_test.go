package x402

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/x402/x402test"
)

// BenchmarkHandleChallenge measures the unpaid path: building and encoding
// the challenge, no facilitator call.
func BenchmarkHandleChallenge(b *testing.B) {
	p, err := New(testConfig("http://127.0.0.1:1"))
	if err != nil {
		b.Fatal(err)
	}
	produce := func() (int, []byte) { return 200, []byte(testDecision) }
	for b.Loop() {
		rec := httptest.NewRecorder()
		p.Handle(rec, httptest.NewRequest(http.MethodPost, testResource, nil), testResource, produce)
	}
}

// BenchmarkHandlePaid measures a paid request end to end against a local
// fake facilitator over loopback HTTP: decode, verify, produce, settle.
func BenchmarkHandlePaid(b *testing.B) {
	fac := x402test.New(b, "", "")
	p, err := New(testConfig(fac.URL))
	if err != nil {
		b.Fatal(err)
	}
	produce := func() (int, []byte) { return 200, []byte(testDecision) }
	i := 0
	for b.Loop() {
		i++
		sig, _ := EncodeHeader(payload(fmt.Sprintf("0x%064x", i)))
		req := httptest.NewRequest(http.MethodPost, testResource, nil)
		req.Header.Set(HeaderPaymentSignature, sig)
		rec := httptest.NewRecorder()
		p.Handle(rec, req, testResource, produce)
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
