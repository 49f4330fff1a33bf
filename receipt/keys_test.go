package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/receipt"
	"github.com/google/go-cmp/cmp"
)

// TestKeyID: the key id is the RFC 7638 thumbprint, checked against the
// Ed25519 example of RFC 8037 appendix A.3.
func TestKeyID(t *testing.T) {
	x, _ := b64Decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if got, want := receipt.KeyID(ed25519.PublicKey(x)), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
		t.Errorf("KeyID = %s, want RFC 8037's %s", got, want)
	}
}

// TestSigningKeyRotation: a key file with the new key first and the old
// one after signs with the new one and publishes both, new first; the
// document reads back as the same keys, and a receipt of the old key
// still verifies against it.
func TestSigningKeyRotation(t *testing.T) {
	oldKey, newKey := testKey("old"), testKey("new")
	old, err := receipt.ParseSigningKey(pemPrivate(t, oldKey))
	if err != nil {
		t.Fatal(err)
	}
	decision := answer(t, receipt.KindDecision, decideRequest)
	oldReceipt := sign(t, old, decision, "")

	file := append([]byte("# rotated on 2026-11-27\n"), pemPrivate(t, newKey)...)
	file = append(file, pemPrivate(t, oldKey)...)
	file = append(file, pemPublic(t, testKey("older").Public().(ed25519.PublicKey))...)
	s, err := receipt.ParseSigningKey(file)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.KeyID(), receipt.KeyID(newKey.Public().(ed25519.PublicKey)); got != want {
		t.Errorf("signs with %s, want the first key %s", got, want)
	}
	var doc struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(s.KeysDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range doc.Keys {
		kids = append(kids, k["kid"])
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["use"] != "sig" {
			t.Errorf("key %v is not an Ed25519 signing JWK", k)
		}
	}
	wantKids := []string{s.KeyID(), old.KeyID(), receipt.KeyID(testKey("older").Public().(ed25519.PublicKey))}
	if diff := cmp.Diff(wantKids, kids); diff != "" {
		t.Errorf("published keys (-want +got):\n%s", diff)
	}
	keys, err := receipt.ParseKeys(s.KeysDocument())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Keys(), keys); diff != "" {
		t.Errorf("ParseKeys(KeysDocument()) (-want +got):\n%s", diff)
	}
	v, err := receipt.Verify([]byte(decideRequest), decision, oldReceipt, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() {
		t.Errorf("a receipt of the previous key does not verify after rotation: %+v", v.Findings)
	}
}

// TestKeyFilesRefused: what is not an Ed25519 key file is refused with a
// reason.
func TestKeyFilesRefused(t *testing.T) {
	pub := pemPublic(t, testKey("k").Public().(ed25519.PublicKey))
	for name, c := range map[string]struct {
		data   string
		parse  func([]byte) error
		wantIn string
	}{
		"signing: empty":                    {"", signing, "PRIVATE KEY"},
		"signing: a public key only":        {string(pub), signing, "PRIVATE KEY"},
		"signing: a certificate":            {"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", signing, "CERTIFICATE"},
		"signing: garbage in a block":       {"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", signing, "block 1"},
		"keys: nothing":                     {"hello", verifying, "no key"},
		"keys: JWKS without keys":           {`{"keys":[]}`, verifying, "no key"},
		"keys: JWKS of RSA":                 {`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`, verifying, "OKP"},
		"keys: JWKS x too short":            {`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA"}]}`, verifying, "/keys/0/x"},
		"keys: JWKS kid not the thumbprint": {`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"mine"}]}`, verifying, "thumbprint"},
		"keys: JWKS duplicate member":       {`{"keys":[],"keys":[]}`, verifying, "duplicate"},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.parse([]byte(c.data))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), c.wantIn) {
				t.Errorf("error %q does not mention %q", err, c.wantIn)
			}
		})
	}
}

func b64Decode(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

func signing(b []byte) error   { _, err := receipt.ParseSigningKey(b); return err }
func verifying(b []byte) error { _, err := receipt.ParseKeys(b); return err }

// TestParseKeysPEM: a PEM private key yields its public half.
func TestParseKeysPEM(t *testing.T) {
	k := testKey("k")
	for _, data := range [][]byte{pemPrivate(t, k), pemPublic(t, k.Public().(ed25519.PublicKey))} {
		keys, err := receipt.ParseKeys(data)
		if err != nil {
			t.Fatal(err)
		}
		pub := keys[receipt.KeyID(k.Public().(ed25519.PublicKey))]
		if !bytes.Equal(pub, k.Public().(ed25519.PublicKey)) || len(keys) != 1 {
			t.Errorf("ParseKeys = %v", keys)
		}
	}
}
