package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/receipt"
	"github.com/google/go-cmp/cmp"
)

// readmeVector matches the receipt vector block of README.md.
var readmeVector = regexp.MustCompile("(?s)<!-- RECEIPT VECTOR -->\n```text\n(.*?)\n```\n")

// TestReadmeVector: the receipt vector in README.md is what this package
// makes and verifies: the key is the one its seed gives and its public key
// and key id are the key's, the response is the library's answer to the
// request, the signed bytes and the receipt are what Sign makes, byte for
// byte, the receipt verifies and recomputes, the hash is its hash, and the
// files the README's verify command reads hold the same vector.
func TestReadmeVector(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := readmeVector.FindAllSubmatch(readme, -1)
	if len(m) != 1 {
		t.Fatalf("README.md has %d receipt vector blocks, want 1", len(m))
	}
	v := map[string]string{}
	var names []string
	for _, line := range strings.Split(string(m[0][1]), "\n") {
		name, value, _ := strings.Cut(line, " ")
		v[name] = strings.TrimSpace(value)
		names = append(names, name)
	}
	if diff := cmp.Diff([]string{"key", "public", "kid", "request", "response", "signed", "receipt", "hash"}, names); diff != "" {
		t.Fatalf("the vector's lines (-want +README):\n%s", diff)
	}

	der, err := base64.StdEncoding.DecodeString(v["key"])
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	s, err := receipt.ParseSigningKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("preflight receipt vector"))
	if !ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey).Equal(s.PublicKey()) {
		t.Errorf("the key is not the one the stated seed gives")
	}
	if got := base64.RawURLEncoding.EncodeToString(s.PublicKey()); got != v["public"] {
		t.Errorf("public key %s, README shows %s", got, v["public"])
	}
	if s.KeyID() != v["kid"] {
		t.Errorf("kid %s, README shows %s", s.KeyID(), v["kid"])
	}
	if diff := cmp.Diff(string(answer(t, receipt.KindDecision, v["request"])), v["response"]); diff != "" {
		t.Errorf("response (-library +README):\n%s", diff)
	}
	shown, err := receipt.Parse([]byte(v["receipt"]))
	if err != nil {
		t.Fatal(err)
	}
	rc := sign(t, s, []byte(v["response"]), shown.Prev)
	if string(rc.Marshal()) != v["receipt"] {
		t.Errorf("receipt: Sign makes\n%s\nREADME shows\n%s", rc.Marshal(), v["receipt"])
	}
	signed, err := rc.SignedBytes([]byte(v["response"]))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(signed), v["signed"]); diff != "" {
		t.Errorf("signed bytes (-made +README):\n%s", diff)
	}
	if rc.Hash() != v["hash"] {
		t.Errorf("hash %s, README shows %s", rc.Hash(), v["hash"])
	}
	got, err := receipt.Verify([]byte(v["request"]), []byte(v["response"]), shown, s.Keys(), &receipt.VerifyOptions{Prev: shown.Prev})
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK() {
		t.Errorf("the README's receipt does not verify: %+v", got.Findings)
	}

	// The files the README's verify command reads.
	for file, want := range map[string][]byte{
		"key.pem":       keyPEM,
		"keys.json":     append(s.KeysDocument(), '\n'),
		"request.json":  []byte(v["request"] + "\n"),
		"response.json": []byte(v["response"] + "\n"),
		"receipt.txt":   []byte(v["receipt"] + "\n"),
	} {
		b, err := os.ReadFile("testdata/vector/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("testdata/vector/%s does not hold the README's vector:\n%s\nwant\n%s", file, b, want)
		}
	}
}
