package receipt_test

import (
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/receipt"
)

// BenchmarkDecideAndSign puts what a receipt adds to a decision beside the
// decision itself: Decide (with the encoding the server does), Sign alone,
// and Verify (signature check plus the recomputation).
func BenchmarkDecideAndSign(b *testing.B) {
	s := testSigner(b, "bench")
	req := []byte(decideRequest)
	response := answer(b, receipt.KindDecision, decideRequest)
	rc := sign(b, s, response, "")
	keys := s.Keys()
	b.Run("decide", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dec, err := preflight.DecideJSON(req)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := json.Marshal(dec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sign", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Sign(response, rc.Hash()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := receipt.Verify(req, response, rc, keys, nil)
			if err != nil || !v.OK() {
				b.Fatal(err, v)
			}
		}
	})
}
