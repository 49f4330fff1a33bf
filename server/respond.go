package server

import (
	"errors"
	"net/http"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/respond"
)

// statusOf maps an error code to its HTTP status. Every code the library's
// decoders and evaluators return is a client error, 400.
func statusOf(code preflight.ErrorCode) int {
	switch code {
	case ErrorPayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case ErrorUnsupportedContentEncoding:
		return http.StatusBadRequest // the spec's status for a body that cannot be read as JSON
	case ErrorNotFound:
		return http.StatusNotFound
	case ErrorMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case ErrorPaymentRequired:
		return http.StatusPaymentRequired
	case ErrorPaymentUnavailable, ErrorCapabilityUnavailable, ErrorServerBusy:
		return http.StatusServiceUnavailable
	case ErrorInternalError:
		return http.StatusInternalServerError
	default:
		return http.StatusBadRequest
	}
}

// writeJSON writes body as an application/json response with status.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	respond.WriteJSON(w, status, body)
}

// writeError writes err as the error envelope with the status of its code.
func writeError(w http.ResponseWriter, err *preflight.Error) {
	respond.WriteError(w, statusOf(err.Code), err)
}

// writeLibraryError writes an error returned by the library. A
// *preflight.Error keeps its code; anything else is a bug and answers 500.
func (h *handler) writeLibraryError(w http.ResponseWriter, r *http.Request, err error) {
	var pe *preflight.Error
	if errors.As(err, &pe) {
		writeError(w, pe)
		return
	}
	h.log.ErrorContext(r.Context(), "library returned an untyped error", "path", r.URL.Path, "error", err.Error())
	writeError(w, &preflight.Error{Code: ErrorInternalError, Message: "the server failed to evaluate the request; this is a bug"})
}
