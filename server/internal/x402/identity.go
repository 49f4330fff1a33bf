package x402

import "crypto/sha256"

// paymentKey identifies a payment for the in-flight guard by what it pays,
// not by how its header is spelled: the network, the asset (ASCII case
// folded), the payer and the nonce, the last two as the 20- and 32-byte
// values the chain compares. Nothing else in the header counts: two headers
// that differ in whitespace, member order, escapes, the letter case of hex
// digits or any other member (the signature included) are the same payment,
// since the token contract accepts each (payer, nonce) once. A header whose
// payer and nonce cannot be read this way is refused before it is keyed
// (see readPayment).
func paymentKey(id paymentID) [32]byte {
	h := sha256.New()
	h.Write([]byte(id.network))
	h.Write([]byte{0})
	h.Write([]byte(id.asset))
	h.Write([]byte{0})
	h.Write(id.payer[:])
	h.Write(id.nonce[:])
	var key [32]byte
	h.Sum(key[:0])
	return key
}
