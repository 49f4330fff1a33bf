package load

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Listener is an in-process HTTP server on a loopback port.
type Listener struct {
	// Addr is the "127.0.0.1:port" the server listens on.
	Addr string
	srv  *http.Server
}

// Listen serves h on 127.0.0.1 at a free port until Close. Both servers of
// a comparison are started this way, in the generator's process, so they
// share its CPUs under the same conditions.
func Listen(h http.Handler) (*Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &Listener{Addr: ln.Addr().String(), srv: srv}, nil
}

// Close stops the server and closes its connections.
func (l *Listener) Close() error { return l.srv.Close() }

// BareAnswer is the fixed 300-byte JSON answer of [BareHandler].
var BareAnswer = bareAnswer()

func bareAnswer() []byte {
	const head, tail = `{"decision":"allow","reason":"bare baseline","padding":"`, `"}`
	return []byte(head + strings.Repeat("x", 300-len(head)-len(tail)) + tail)
}

// maxBareBody matches the 64 KiB body limit of the preflight server.
const maxBareBody = 65536

// BareHandler is the baseline of the server comparison: it reads the body
// (at most 64 KiB), unmarshals it into any with encoding/json and writes
// BareAnswer with status 200, or 400 when the body is not JSON. It does
// nothing else and keeps no state; it is safe for concurrent use.
func BareHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBareBody))
		if err != nil {
			http.Error(w, `{"error":"unreadable body"}`, http.StatusBadRequest)
			return
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			http.Error(w, `{"error":"invalid json"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(BareAnswer)
	})
}
