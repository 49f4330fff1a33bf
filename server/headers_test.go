package server

import (
	"net/http"
	"testing"

	"github.com/agentpreflight/preflight/receipt"
)

// TestCanonicalHeaderKeys checks the header names that the request path
// reads and writes as map keys (without Header.Get and Set, which
// canonicalize on every call): each must already be in canonical form, or
// the lookup would miss the header net/http stored.
func TestCanonicalHeaderKeys(t *testing.T) {
	for _, k := range []string{headerRequestID, receipt.PrevHeader, "Content-Type", "Content-Encoding", "Content-Length", "X-Content-Type-Options"} {
		if c := http.CanonicalHeaderKey(k); c != k {
			t.Errorf("header key %q is read or written as a map key but its canonical form is %q", k, c)
		}
	}
}
