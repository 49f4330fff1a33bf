package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	"github.com/agentpreflight/preflight/strictjson"
)

// b64 is unpadded base64url (RFC 4648 §5), the encoding of signatures,
// thumbprints and JWK members.
var b64 = base64.RawURLEncoding

// KeyID returns the key id of pub: the RFC 7638 JWK thumbprint, unpadded
// base64url of the SHA-256 of {"crv":"Ed25519","kty":"OKP","x":X} with X
// the unpadded base64url of the 32 key bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64.EncodeToString(pub) + `"}`))
	return b64.EncodeToString(sum[:])
}

// Keys maps key ids to the public keys receipts are verified with. Build it
// with [ParseKeys] or from a [Signer]; a nil Keys knows no key.
type Keys map[string]ed25519.PublicKey

// add puts pub in k under its key id.
func (k Keys) add(pub ed25519.PublicKey) { k[KeyID(pub)] = pub }

// Signer signs receipts with one Ed25519 key and knows the earlier public
// keys that the key document still lists. It is immutable and safe for
// concurrent use.
type Signer struct {
	priv     ed25519.PrivateKey
	kid      string
	previous []ed25519.PublicKey
}

// NewSigner returns a signer for priv. previous are the public keys of
// earlier signing keys, listed after priv's in [Signer.KeysDocument] so
// that the receipts they signed still verify; a repeat of priv's public key
// among them is dropped.
func NewSigner(priv ed25519.PrivateKey, previous ...ed25519.PublicKey) (*Signer, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("receipt: an Ed25519 private key is %d bytes, not %d", ed25519.PrivateKeySize, len(priv))
	}
	s := &Signer{priv: slices.Clone(priv), kid: KeyID(priv.Public().(ed25519.PublicKey))}
	seen := map[string]bool{s.kid: true}
	for i, p := range previous {
		if len(p) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("receipt: previous key %d is %d bytes, not the %d of an Ed25519 public key", i, len(p), ed25519.PublicKeySize)
		}
		if err := checkPublic(p); err != nil {
			return nil, fmt.Errorf("receipt: previous key %d: %v", i, err)
		}
		if id := KeyID(p); !seen[id] {
			seen[id] = true
			s.previous = append(s.previous, slices.Clone(p))
		}
	}
	return s, nil
}

// KeyID returns the key id of the signing key.
func (s *Signer) KeyID() string { return s.kid }

// PublicKey returns the public half of the signing key.
func (s *Signer) PublicKey() ed25519.PublicKey {
	return slices.Clone(s.priv.Public().(ed25519.PublicKey))
}

// Keys returns the signing key's public key and every previous one, by key
// id.
func (s *Signer) Keys() Keys {
	k := Keys{}
	k.add(s.priv.Public().(ed25519.PublicKey))
	for _, p := range s.previous {
		k.add(p)
	}
	return k
}

// jwk is one member of a JSON Web Key Set (RFC 7517, with the OKP key type
// of RFC 8037).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// KeysDocument returns the JSON Web Key Set that publishes the signer's
// public keys: {"keys":[…]}, the signing key first, then the previous keys
// in the order given to [NewSigner]; each with kty OKP, crv Ed25519, x,
// kid, use "sig" and alg "EdDSA". [ParseKeys] reads it back.
func (s *Signer) KeysDocument() []byte {
	keys := []jwk{toJWK(s.priv.Public().(ed25519.PublicKey))}
	for _, p := range s.previous {
		keys = append(keys, toJWK(p))
	}
	b, _ := json.Marshal(struct {
		Keys []jwk `json:"keys"`
	}{keys}) // plain strings: cannot fail
	return b
}

func toJWK(p ed25519.PublicKey) jwk {
	return jwk{Kty: "OKP", Crv: "Ed25519", X: b64.EncodeToString(p), Kid: KeyID(p), Use: "sig", Alg: "EdDSA"}
}

// ParseSigningKey reads a signing key file: PEM, whose first PRIVATE KEY
// block (PKCS#8 Ed25519) is the key that signs and whose further PRIVATE
// KEY or PUBLIC KEY (PKIX Ed25519) blocks are earlier keys (see
// [NewSigner]). Rotating a key is putting the new key first and keeping the
// old one after it. Text outside the blocks is ignored, as PEM allows.
func ParseSigningKey(data []byte) (*Signer, error) {
	blocks, err := pemKeys(data)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 || blocks[0].priv == nil {
		return nil, errors.New("receipt: the signing key file must begin with a PRIVATE KEY block (PKCS#8 Ed25519, as openssl genpkey -algorithm ed25519 writes)")
	}
	var previous []ed25519.PublicKey
	for _, b := range blocks[1:] {
		previous = append(previous, b.pub)
	}
	return NewSigner(blocks[0].priv, previous...)
}

// ParseKeys reads the public keys receipts are verified with, from either
// a JSON Web Key Set such as [Signer.KeysDocument] writes (keys of other
// types than OKP Ed25519 are ignored, as RFC 7517 §5 asks, and so are
// members other than kty, crv, x and kid; a kid that is not the key's
// thumbprint is an error, and so is a set without an Ed25519 key) or PEM with PUBLIC KEY or PRIVATE
// KEY blocks (of a private key only the public half is kept). A key that
// is a point of small order, or spelled with y at or above the field prime,
// is refused: a signature under it proves nothing.
func ParseKeys(data []byte) (Keys, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return parseJWKS(t)
	}
	blocks, err := pemKeys(data)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, errors.New("receipt: no key found: want a JSON Web Key Set or PEM PUBLIC KEY / PRIVATE KEY blocks")
	}
	k := Keys{}
	for _, b := range blocks {
		k.add(b.pub)
	}
	return k, nil
}

// pemKey is one key block of a PEM file.
type pemKey struct {
	priv ed25519.PrivateKey // nil for a PUBLIC KEY block
	pub  ed25519.PublicKey
}

// pemKeys reads every block of data, which must all be Ed25519 PRIVATE KEY
// or PUBLIC KEY blocks.
func pemKeys(data []byte) ([]pemKey, error) {
	var out []pemKey
	for n := 1; ; n++ {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out, nil
		}
		switch b.Type {
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("receipt: PEM block %d: %v", n, err)
			}
			priv, ok := k.(ed25519.PrivateKey)
			if !ok {
				return nil, fmt.Errorf("receipt: PEM block %d is a %T, not an Ed25519 private key", n, k)
			}
			out = append(out, pemKey{priv: priv, pub: priv.Public().(ed25519.PublicKey)})
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("receipt: PEM block %d: %v", n, err)
			}
			pub, ok := k.(ed25519.PublicKey)
			if !ok {
				return nil, fmt.Errorf("receipt: PEM block %d is a %T, not an Ed25519 public key", n, k)
			}
			if err := checkPublic(pub); err != nil {
				return nil, fmt.Errorf("receipt: PEM block %d: %v", n, err)
			}
			out = append(out, pemKey{pub: pub})
		default:
			return nil, fmt.Errorf("receipt: PEM block %d is %q; want PRIVATE KEY (PKCS#8 Ed25519) or PUBLIC KEY (PKIX Ed25519)", n, b.Type)
		}
	}
}

// maxKeysDocument bounds a key set document; one key takes about 200 bytes.
const maxKeysDocument = 1 << 20

// parseJWKS reads a JSON Web Key Set of Ed25519 keys.
func parseJWKS(data []byte) (Keys, error) {
	if len(data) > maxKeysDocument {
		return nil, fmt.Errorf("receipt: the key set is %d bytes, over the %d this reads", len(data), maxKeysDocument)
	}
	doc, err := strictjson.Parse(data, strictjson.Limits{MaxDepth: 8})
	if err != nil {
		return nil, fmt.Errorf("receipt: the key set is not JSON: %v", err)
	}
	list, ok := doc.Get("keys")
	if doc.Kind() != strictjson.Object || !ok || list.Kind() != strictjson.Array {
		return nil, errors.New(`receipt: a key set is an object with a "keys" array`)
	}
	k := Keys{}
	ignored := 0
	for it := list.Iter(); it.Next(); {
		at := fmt.Sprintf("/keys/%d", it.Index())
		key := it.Value()
		if key.Kind() != strictjson.Object {
			return nil, fmt.Errorf("receipt: %s: a key is an object", at)
		}
		member := func(name string) string {
			v, ok := key.Get(name)
			if !ok || v.Kind() != strictjson.String {
				return ""
			}
			return v.Str()
		}
		if member("kty") != "OKP" || member("crv") != "Ed25519" {
			// Another type of key (RSA, EC, X25519 …), which RFC 7517 §5
			// says a reader SHOULD ignore.
			ignored++
			continue
		}
		x, err := b64.DecodeString(member("x"))
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("receipt: %s/x: want the %d key bytes in unpadded base64url", at, ed25519.PublicKeySize)
		}
		pub := ed25519.PublicKey(x)
		if err := checkPublic(pub); err != nil {
			return nil, fmt.Errorf("receipt: %s/x: %v", at, err)
		}
		if kid, ok := key.Get("kid"); ok && (kid.Kind() != strictjson.String || kid.Str() != KeyID(pub)) {
			return nil, fmt.Errorf("receipt: %s/kid is not the key's RFC 7638 thumbprint %s", at, KeyID(pub))
		}
		k.add(pub)
	}
	if len(k) == 0 {
		return nil, fmt.Errorf(`receipt: the key set lists no key of kty "OKP" and crv "Ed25519" (it has %d of other types, which are ignored)`, ignored)
	}
	return k, nil
}

// checkPublic refuses a public key under which signatures prove nothing:
// a point of small order (under the identity, R = identity and S = 0 sign
// every message), and a y coordinate spelled at or above the field prime p
// (RFC 8032 §5.1.3 refuses it; it would give one point two key ids). It
// compares encodings only, so it needs no curve arithmetic: the eight
// small-order points have y in {0, 1, p−1, ±y8}, each with either sign bit.
func checkPublic(pub ed25519.PublicKey) error {
	var y [32]byte
	copy(y[:], pub)
	y[31] &= 0x7f
	if y[31] == 0x7f && y[0] >= 0xed && bytes.Count(y[1:31], []byte{0xff}) == 30 {
		return errors.New("not a canonical Ed25519 public key (its y coordinate is at or above the field prime)")
	}
	for _, w := range smallOrderY {
		if y == w {
			return errors.New("a point of small order, under which any signature verifies: not an Ed25519 public key")
		}
	}
	return nil
}

// smallOrderY are the y coordinates (little-endian, sign bit clear) of the
// points of small order: 0 (order 4), 1 (the identity), p−1 (order 2) and
// the two of order 8.
var smallOrderY = [5][32]byte{
	{0},
	{1},
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
}
