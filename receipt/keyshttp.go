package receipt

import "net/http"

// KeysPath is where a server that signs receipts publishes its key
// document ([Signer.KeysDocument]): preflightd serves it, and so does
// preflightd proxy, on their listeners.
const KeysPath = "/.well-known/preflight-receipt-keys"

// WriteKeys answers a request for the key document of s: 200 with the
// document as application/jwk-set+json, cacheable for five minutes (a
// rotated key is listed within that time). The caller answers the
// requests of a server without a signer itself (404).
func WriteKeys(w http.ResponseWriter, s *Signer) {
	h := w.Header()
	h.Set("Content-Type", "application/jwk-set+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "max-age=300")
	w.WriteHeader(http.StatusOK)
	w.Write(s.KeysDocument())
}
