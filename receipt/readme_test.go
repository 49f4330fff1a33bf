package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"os"
	"regexp"
	"testing"

	"github.com/agentpreflight/preflight/receipt"
	"github.com/google/go-cmp/cmp"
)

// readmeVector matches one block of the receipt vector in README.md.
var readmeVector = regexp.MustCompile("(?s)<!-- RECEIPT VECTOR: ([a-z]+) -->\n```[a-z]*\n(.*?)\n```\n")

// TestReadmeVector: the receipt vector in README.md is what this package
// makes and verifies: the key is the one its seed gives, the key set is
// the key's document, the response is the library's answer to the
// request, the signed bytes and the receipt are what Sign makes, byte for
// byte, the receipt verifies and recomputes, and the hash is its hash.
func TestReadmeVector(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	v := map[string][]byte{}
	for _, m := range readmeVector.FindAllSubmatch(readme, -1) {
		v[string(m[1])] = m[2]
	}
	var names []string
	for _, n := range []string{"key", "keys", "request", "response", "signed", "receipt", "hash"} {
		if _, ok := v[n]; ok {
			names = append(names, n)
		}
	}
	if len(names) != 7 || len(v) != 7 {
		t.Fatalf("README.md has the receipt vector blocks %q; want key, keys, request, response, signed, receipt and hash, once each", names)
	}

	// The files the README's verify command reads are the blocks.
	for name, file := range map[string]string{"key": "key.pem", "keys": "keys.json", "request": "request.json", "response": "response.json", "receipt": "receipt.txt"} {
		b, err := os.ReadFile("testdata/vector/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(v[name])+"\n", string(b)); diff != "" {
			t.Errorf("testdata/vector/%s differs from the README's %s block (-README +file):\n%s", file, name, diff)
		}
	}

	s, err := receipt.ParseSigningKey(v["key"])
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("preflight receipt vector"))
	if want := receipt.KeyID(ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey)); s.KeyID() != want {
		t.Errorf("the key is not the one the stated seed gives")
	}
	if diff := cmp.Diff(string(s.KeysDocument()), string(v["keys"])); diff != "" {
		t.Errorf("key set (-made +README):\n%s", diff)
	}
	if diff := cmp.Diff(string(answer(t, receipt.KindDecision, string(v["request"]))), string(v["response"])); diff != "" {
		t.Errorf("response (-library +README):\n%s", diff)
	}
	shown, err := receipt.Parse(v["receipt"])
	if err != nil {
		t.Fatal(err)
	}
	rc := sign(t, s, v["response"], shown.Prev)
	if !bytes.Equal(rc.Marshal(), v["receipt"]) {
		t.Errorf("receipt: Sign makes\n%s\nREADME shows\n%s", rc.Marshal(), v["receipt"])
	}
	signed, err := rc.SignedBytes(v["response"])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(signed), string(v["signed"])); diff != "" {
		t.Errorf("signed bytes (-made +README):\n%s", diff)
	}
	if rc.Hash() != string(v["hash"]) {
		t.Errorf("hash %s, README shows %s", rc.Hash(), v["hash"])
	}
	keys, err := receipt.ParseKeys(v["keys"])
	if err != nil {
		t.Fatal(err)
	}
	got, err := receipt.Verify(v["request"], v["response"], shown, keys, &receipt.VerifyOptions{Prev: shown.Prev})
	if err != nil {
		t.Fatal(err)
	}
	if !got.OK() {
		t.Errorf("the README's receipt does not verify: %+v", got.Findings)
	}
}
