// Package respond writes the server's JSON answers, the error envelope
// included, for every part of the server that answers HTTP: the routes
// and the paywall write through it, so every answer carries the same
// headers.
package respond

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/agentpreflight/preflight"
)

// The error codes the paywall returns besides the library's. Package
// server exports them with the rest of its codes.
const (
	PaymentRequired    preflight.ErrorCode = "payment_required"    // 402: pay, then retry with PAYMENT-SIGNATURE
	PaymentUnavailable preflight.ErrorCode = "payment_unavailable" // 503: payment misconfigured, or the facilitator failed
	ServerBusy         preflight.ErrorCode = "server_busy"         // 503 with Retry-After: too busy to evaluate or to pay; nothing was charged
)

// The values of the fixed headers of every answer.
var (
	contentTypeJSON = []string{"application/json"}
	noSniff         = []string{"nosniff"}
)

// WriteJSON writes body as an application/json answer with status.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	// As Header.Set with canonical keys, sharing the fixed values: a
	// header's value slice is replaced, never written in place.
	h["Content-Type"] = contentTypeJSON
	h["X-Content-Type-Options"] = noSniff
	h["Content-Length"] = contentLength(len(body))
	w.WriteHeader(status)
	w.Write(body)
}

// contentLengths holds the Content-Length header values of the answer
// lengths seen so far below len(contentLengths), each made once and then
// shared, as the fixed values are: most answers have one of a few lengths,
// and a value made per answer was two allocations.
var contentLengths [8 << 10]atomic.Pointer[[]string]

// contentLength returns the Content-Length header value of n bytes.
func contentLength(n int) []string {
	if n >= len(contentLengths) {
		return []string{strconv.Itoa(n)}
	}
	if v := contentLengths[n].Load(); v != nil {
		return *v
	}
	v := []string{strconv.Itoa(n)}
	contentLengths[n].Store(&v) // a racing store of the same value is harmless
	return v
}

// WriteError writes err as the error envelope with status.
func WriteError(w http.ResponseWriter, status int, err *preflight.Error) {
	body, mErr := json.Marshal(err)
	if mErr != nil {
		// Unreachable: the envelope holds only strings.
		body = []byte(`{"error":{"code":"internal_error","message":"the error could not be encoded"}}`)
	}
	WriteJSON(w, status, body)
}
