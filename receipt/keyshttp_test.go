package receipt

import (
	"crypto/ed25519"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteKeys: the answer is the signer's key document with its media
// type, and reads back into the signer's keys.
func TestWriteKeys(t *testing.T) {
	old := ed25519.NewKeyFromSeed(make([]byte, 32))
	s, err := NewSigner(ed25519.NewKeyFromSeed([]byte("0123456789abcdef0123456789abcdef")), old.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	WriteKeys(w, s)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/jwk-set+json" || w.Header().Get("Cache-Control") == "" {
		t.Errorf("status %d, headers %v", w.Code, w.Header())
	}
	if got := w.Body.String(); got != string(s.KeysDocument()) {
		t.Errorf("body %s, want the key document %s", got, s.KeysDocument())
	}
	keys, err := ParseKeys(w.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Keys(), keys); diff != "" {
		t.Errorf("keys read back (-signer's +document's):\n%s", diff)
	}
}
