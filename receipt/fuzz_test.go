package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/agentpreflight/preflight/receipt"
)

// FuzzReceipt: any bytes given to Parse are refused with an error or read
// as a receipt whose wire form reads back as the same receipt; Verify of a
// read receipt never panics and never passes one that was not signed for
// the fixed answer (only the receipt the seed's signer made passes).
func FuzzReceipt(f *testing.F) {
	s := testSigner(f, "signer")
	decision := answer(f, receipt.KindDecision, decideRequest)
	check := answer(f, receipt.KindCheck, checkRequest)
	good := sign(f, s, decision, "")
	goodCheck := sign(f, s, check, good.Hash())
	f.Add(good.Marshal())
	f.Add(goodCheck.Marshal())
	f.Add(indent(f, good.Marshal()))
	f.Add([]byte(`{"version":1,"kid":"k","requestHash":"` + good.RequestFingerprint + `","sig":"` + string(bytes.Repeat([]byte("A"), 86)) + `"}`))
	f.Add([]byte(`{"version":1e0}`))
	f.Add([]byte(`{"kid":"\ud800"}`))
	keys := s.Keys()
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := receipt.Parse(data)
		if err != nil {
			return
		}
		wire := r.Marshal()
		back, err := receipt.Parse(wire)
		if err != nil {
			t.Fatalf("the wire form %s of a parsed receipt does not parse: %v", wire, err)
		}
		if !bytes.Equal(back.Marshal(), wire) || back.Hash() != r.Hash() {
			t.Fatalf("the wire form is not stable: %s then %s", wire, back.Marshal())
		}
		request, response := decideRequest, decision
		if r.Kind() == receipt.KindCheck {
			request, response = checkRequest, check
		}
		v, err := receipt.Verify([]byte(request), response, r, keys, nil)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if v.OK() && !bytes.Equal(wire, good.Marshal()) && !bytes.Equal(wire, goodCheck.Marshal()) {
			t.Fatalf("a receipt the signer never made verifies: %s", wire)
		}
	})
}

// FuzzParseKeys: a key set document or PEM file is refused with an error
// or read as keys each filed under its own key id.
func FuzzParseKeys(f *testing.F) {
	s := testSigner(f, "signer")
	f.Add(s.KeysDocument())
	f.Add(pemPublic(f, s.PublicKey()))
	f.Add(pemPrivate(f, testKey("k")))
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AA"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := receipt.ParseKeys(data)
		if err != nil {
			return
		}
		if len(keys) == 0 {
			t.Fatal("no error and no key")
		}
		for kid, pub := range keys {
			if len(pub) != ed25519.PublicKeySize || receipt.KeyID(pub) != kid {
				t.Fatalf("key %x filed under %s", pub, kid)
			}
		}
	})
}
