package mcpproxy

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// jsonErrors turns the plain-text HTTP errors of the downstream transport
// (http.Error's "Bad Request: …" bodies) into a JSON-RPC error body, as
// every refusal of the proxy's own is: a client, or an operator's tooling,
// reads one shape. Anything else passes as it is written.
type jsonErrors struct {
	http.ResponseWriter
	capturing atomic.Bool  // a plain-text error is being held
	wrote     atomic.Bool  // the status went out
	status    atomic.Int32 // of the held error
	text      []byte       // of the held error, bounded by maxErrorText; written only by the handler
}

const maxErrorText = 1 << 10

func (j *jsonErrors) WriteHeader(code int) {
	if code >= 400 && !j.wrote.Load() && strings.HasPrefix(j.Header().Get("Content-Type"), "text/plain") {
		j.status.Store(int32(code))
		j.capturing.Store(true)
		return
	}
	j.wrote.Store(true)
	j.ResponseWriter.WriteHeader(code)
}

func (j *jsonErrors) Write(b []byte) (int, error) {
	if j.capturing.Load() {
		if room := maxErrorText - len(j.text); room > 0 {
			j.text = append(j.text, b[:min(len(b), room)]...)
		}
		return len(b), nil
	}
	j.wrote.Store(true)
	return j.ResponseWriter.Write(b)
}

func (j *jsonErrors) Flush() {
	if j.capturing.Load() {
		return
	}
	if f, ok := j.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.ResponseWriter }

// done writes the held error, if any, as a JSON-RPC error: call it when
// the handler has returned.
func (j *jsonErrors) done() {
	if !j.capturing.Load() {
		return
	}
	j.Header().Del("Content-Length")
	j.Header().Del("X-Content-Type-Options")
	refuse(j.ResponseWriter, int(j.status.Load()), nil, codeInvalidRequest, strings.TrimSpace(string(j.text)))
}
