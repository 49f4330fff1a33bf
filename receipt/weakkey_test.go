package receipt_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/receipt"
)

// smallOrderKeys are encodings of the eight points of small order on
// edwards25519 (canonical, with and without the sign bit, and the
// non-canonical y ≥ p spellings of y = 0, 1 and −1). Under such a "public
// key" a signature can be made for any message without a private key.
var smallOrderKeys = []string{
	"0100000000000000000000000000000000000000000000000000000000000000", // identity
	"0100000000000000000000000000000000000000000000000000000000000080",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // order 2
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"0000000000000000000000000000000000000000000000000000000000000000", // order 4
	"0000000000000000000000000000000000000000000000000000000000000080",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", // order 8
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p: 0
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p+1: 1
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
}

// TestWeakKeysRefused: a key set or PEM file holding a small-order point
// is refused. Under the identity "key", the signature R = identity, S = 0
// verifies for every message; Verify must never be handed such a key.
func TestWeakKeysRefused(t *testing.T) {
	// The forgery is real: without the check, this receipt verifies.
	identity, _ := hex.DecodeString(smallOrderKeys[0])
	forged := make([]byte, ed25519.SignatureSize)
	forged[0] = 1
	if !ed25519.Verify(identity, []byte("any answer at all"), forged) {
		t.Fatal("the identity key does not accept the forged signature; the premise of this test is wrong")
	}
	for _, h := range smallOrderKeys {
		key, _ := hex.DecodeString(h)
		x := base64.RawURLEncoding.EncodeToString(key)
		jwks := `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}]}`
		if _, err := receipt.ParseKeys([]byte(jwks)); err == nil || !strings.Contains(err.Error(), "/keys/0/x") {
			t.Errorf("JWKS with x=%s: err = %v, want a refusal naming /keys/0/x", h, err)
		}
		// A PKIX PUBLIC KEY block of the same point.
		der, err := x509.MarshalPKIXPublicKey(ed25519.PublicKey(key))
		if err != nil {
			t.Fatal(err)
		}
		block := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		if _, err := receipt.ParseKeys(block); err == nil || !strings.Contains(err.Error(), "PEM block 1") {
			t.Errorf("PEM PUBLIC KEY %s: err = %v, want a refusal", h, err)
		}
		// As an earlier key beside a real signing key.
		if _, err := receipt.ParseSigningKey(append(pemPrivate(t, testKey("k")), block...)); err == nil {
			t.Errorf("signing key file with earlier key %s: no error", h)
		}
		if _, err := receipt.NewSigner(testKey("k"), ed25519.PublicKey(key)); err == nil {
			t.Errorf("NewSigner with earlier key %s: no error", h)
		}
	}
}

// TestRealKeysAccepted: the small-order check refuses no real key.
func TestRealKeysAccepted(t *testing.T) {
	for i := range 2000 {
		pub := testKey(strings.Repeat("k", i%50) + string(rune('a'+i%26)) + string(rune(i))).Public().(ed25519.PublicKey)
		x := base64.RawURLEncoding.EncodeToString(pub)
		if _, err := receipt.ParseKeys([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}]}`)); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
}

// TestKeySetIgnoresOtherKeyTypes: RFC 7517 §5 says a key set's keys of a
// type the reader does not use SHOULD be ignored, so a key set that also
// publishes RSA, EC or X25519 keys (a gateway's shared document) yields
// its Ed25519 keys; one with none of them is refused, saying so.
func TestKeySetIgnoresOtherKeyTypes(t *testing.T) {
	pub := testKey("k").Public().(ed25519.PublicKey)
	ed := `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	others := `{"kty":"RSA","n":"AQAB","e":"AQAB","kid":"rsa-1"},{"kty":"EC","crv":"P-256","x":"AA","y":"AA"},{"kty":"OKP","crv":"X25519","x":"AA"}`
	keys, err := receipt.ParseKeys([]byte(`{"keys":[` + others + `,` + ed + `]}`))
	if err != nil {
		t.Fatalf("a key set with other key types besides an Ed25519 key: %v", err)
	}
	if len(keys) != 1 || keys[receipt.KeyID(pub)] == nil {
		t.Errorf("keys %v, want the Ed25519 key alone", keys)
	}
	if _, err := receipt.ParseKeys([]byte(`{"keys":[` + others + `]}`)); err == nil || !strings.Contains(err.Error(), "Ed25519") {
		t.Errorf("a key set without an Ed25519 key: err %v, want a refusal naming Ed25519", err)
	}
}
