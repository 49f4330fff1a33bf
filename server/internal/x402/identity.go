package x402

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"

	"github.com/agentpreflight/preflight/internal/jsonv"
)

// paymentKey identifies a payment for the in-flight guard by what it pays,
// not by how its header is spelled: two headers that differ in whitespace,
// member order or the letter case of hex digits are the same payment.
//
// For an EVM exact payload (EIP-3009 "authorization", or Permit2
// "permit2Authorization") the identity is the network, the asset, the
// payer (from) and the nonce, hex compared without case: the token
// contract accepts each (payer, nonce) once, so no two distinct payments
// share them. Any other payload is identified by its canonical JSON (members
// sorted, no whitespace) with network and asset.
func paymentKey(p PaymentPayload) [32]byte {
	h := sha256.New()
	h.Write([]byte(p.Accepted.Network))
	h.Write([]byte{0})
	h.Write([]byte(strings.ToLower(p.Accepted.Asset)))
	h.Write([]byte{0})
	if tree, err := jsonv.Parse(p.Payload, jsonv.Limits{MaxDepth: maxHeaderDepth}); err == nil {
		for _, name := range []string{"authorization", "permit2Authorization"} {
			auth, ok := tree.Get(name)
			if !ok || auth.Kind() != jsonv.Object {
				continue
			}
			from, okFrom := auth.Get("from")
			nonce, okNonce := auth.Get("nonce")
			if okFrom && okNonce && from.Kind() == jsonv.String && nonce.Kind() == jsonv.String {
				h.Write([]byte(name))
				h.Write([]byte{0})
				h.Write([]byte(strings.ToLower(from.Str())))
				h.Write([]byte{0})
				h.Write([]byte(strings.ToLower(nonce.Str())))
				var key [32]byte
				h.Sum(key[:0])
				return key
			}
		}
	}
	// No recognised authorization: canonical JSON of the whole payload.
	// encoding/json sorts map keys; the payload was parsed strictly before.
	var v any
	dec := json.NewDecoder(bytes.NewReader(p.Payload))
	dec.UseNumber() // numbers keep their text
	if dec.Decode(&v) == nil {
		if canon, err := json.Marshal(v); err == nil {
			h.Write([]byte("payload\x00"))
			h.Write(canon)
		}
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}
