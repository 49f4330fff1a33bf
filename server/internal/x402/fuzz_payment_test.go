package x402

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzPaymentSignature feeds arbitrary PAYMENT-SIGNATURE values to the
// paywall's decoder. It must never panic; a value it accepts must have
// x402Version 2 and object-valued accepted and payload, and re-encoding
// the decoded payment must give the same payment identity (the in-flight
// guard keys on what is paid, not on spelling).
func FuzzPaymentSignature(f *testing.F) {
	accepted, _ := json.Marshal(offer)
	good := `{"x402Version":2,"accepted":` + string(accepted) + `,"payload":{"signature":"0x01","authorization":{"from":"` + testPayer + `","nonce":"0x00AB` + strings.Repeat("cd", 31) + `"}}}`
	for _, s := range []string{
		good,
		strings.ReplaceAll(good, ",", " ,\n "),
		`{"x402Version":2,"x402Version":2}`,
		`{"X402VERSION":2,"accepted":{},"payload":{}}`,
		`{"x402Version":2,"accepted":{"PayTo":"x"},"payload":{}}`,
		`{"x402Version":2,"accepted":{},"payload":{"permit2Authorization":{"from":"` + testPayer + `","nonce":"1"}}}`,
		`{"x402Version":2,"accepted":{},"payload":{"authorization":{"from":"` + testPayer + `","Nonce":"1"}}}`,
		`{"x402Version":2,"accepted":{},"payload":{"n":1e400}}`,
		"{\"x402Version\":2,\"accepted\":{},\"payload\":{\"s\":\"\xff\"}}",
		`[]`, `{}`, `null`, `{"x402Version":"2"}`,
	} {
		f.Add(b64(s))
	}
	f.Add("not base64!")
	f.Add("")
	f.Fuzz(func(t *testing.T, sig string) {
		p, keyP, err := decodePayload(sig)
		if err != nil {
			if strings.Contains(err.Error(), sig) && len(sig) > 8 {
				t.Fatalf("the error quotes the header: %v", err)
			}
			return
		}
		if p.X402Version != 2 || !isObject(p.Payload) {
			t.Fatalf("accepted a payment with version %d, payload %q", p.X402Version, p.Payload)
		}
		again, err := EncodeHeader(p)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		_, keyQ, err := decodePayload(again)
		if err != nil {
			t.Fatalf("the re-encoded payment is refused: %v", err)
		}
		if keyP != keyQ {
			t.Fatalf("re-encoding changed the payment identity")
		}
	})
}
