package server

import (
	"net/http"

	"github.com/agentpreflight/preflight"
)

// newMCPHandler returns the handler for /mcp (GET and POST). It is unpaid and
// stateless.
//
// This is a placeholder that answers every request with 405 and the error
// envelope; the MCP transport replaces it.
func newMCPHandler(cfg Config) http.Handler {
	_ = cfg
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		b, _ := (&preflight.Error{Code: preflight.CodeMethodNotAllowed, Message: "MCP is not available yet"}).MarshalJSON()
		w.Write(b)
	})
}
