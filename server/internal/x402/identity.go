package x402

import (
	"crypto/sha256"
	"encoding/binary"
)

// paymentKey identifies a payment for the in-flight guard by what it pays,
// not by how its header is spelled: the network, the asset (ASCII case
// folded), the payer and the nonce, the last two as the 20- and 32-byte
// values the chain compares, and nothing else. Two headers that differ in
// whitespace, member order, escapes, the letter case of hex digits or any
// other member (the signature included) are the same payment, since the
// token contract accepts each (payer, nonce) once; two different tuples
// never share a key (the strings are length-prefixed). A header whose payer
// and nonce cannot be read is refused before it is keyed (see readPayment).
func paymentKey(id paymentID) [32]byte {
	h := sha256.New()
	for _, s := range []string{id.network, id.asset} {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
		h.Write([]byte(s))
	}
	h.Write(id.payer[:])
	h.Write(id.nonce[:])
	var key [32]byte
	h.Sum(key[:0])
	return key
}
