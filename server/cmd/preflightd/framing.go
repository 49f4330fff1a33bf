package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/agentpreflight/preflight"
)

// A request with both Content-Length and Transfer-Encoding is framed one
// way by a front end that reads Content-Length and another way by net/http,
// which reads Transfer-Encoding and drops Content-Length from the header
// before any handler sees it; the bytes left over would be read as the
// next request: request smuggling. RFC 9112 §6.1 says the server must
// close the connection after answering such a request. net/http (Go 1.26)
// keeps it open (golang/go#80942), so the check sits on the connection:
// framingScanner reads every byte net/http reads, and a header section (a
// run of lines without an empty one) naming both fields taints the
// connection. rejectAmbiguousFraming then answers each request on it 400
// invalid_request with Connection: close, which makes net/http close the
// connection after the answer. A body cannot taint a connection by
// accident: the service's bodies are JSON, where no line starts with a
// header name.

// framingScanner finds a header section naming both Content-Length and
// Transfer-Encoding in a byte stream. Only the connection's reader calls
// scan; tainted may be read from any goroutine.
type framingScanner struct {
	line         [len("transfer-encoding:")]byte // the start of the current line, lower case
	n            int                             // bytes of the current line
	hasCL, hasTE bool                            // in the current run of lines
	tainted      atomic.Bool
}

func (s *framingScanner) scan(p []byte) {
	for len(p) > 0 {
		if s.n > len(s.line) {
			// Past the bytes that matter in this line: jump to its end
			// (a JSON body is mostly one long line).
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				return
			}
			p = p[i:]
		}
		b := p[0]
		p = p[1:]
		if b != '\n' {
			if s.n < len(s.line) {
				if 'A' <= b && b <= 'Z' {
					b += 'a' - 'A'
				}
				s.line[s.n] = b
			}
			s.n++
			continue
		}
		switch start := string(s.line[:min(s.n, len(s.line))]); {
		case s.n == 0 || (s.n == 1 && start == "\r"): // an empty line ends a header section
			s.hasCL, s.hasTE = false, false
		case len(start) >= len("content-length:") && start[:len("content-length:")] == "content-length:":
			s.hasCL = true
		case start == "transfer-encoding:":
			s.hasTE = true
		}
		if s.hasCL && s.hasTE {
			s.tainted.Store(true)
		}
		s.n = 0
	}
}

type connKey struct{}

// connContext is the http.Server's ConnContext hook: it puts the
// connection's trackedConn in its requests' contexts.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc := tracked(c); tc != nil {
		return context.WithValue(ctx, connKey{}, tc)
	}
	return ctx
}

// rejectAmbiguousFraming answers a request on a connection that carried a
// header section with both Content-Length and Transfer-Encoding with 400
// and closes the connection after the answer. It also tells the connection
// when its handler starts and returns (see writeDeadline).
func rejectAmbiguousFraming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tc, _ := r.Context().Value(connKey{}).(*trackedConn)
		if tc == nil {
			next.ServeHTTP(w, r)
			return
		}
		tc.responseStarted()
		defer tc.responseDone()
		if tc.framing.tainted.Load() {
			w.Header().Set("Connection", "close")
			writeEnvelope(w, http.StatusBadRequest, &preflight.Error{
				Code:    preflight.ErrorInvalidRequest,
				Message: "the request has both Content-Length and Transfer-Encoding, which frame its body two ways; send one of them (RFC 9112 section 6.1); the connection is closed",
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeEnvelope writes err as the service's error envelope with status.
func writeEnvelope(w http.ResponseWriter, status int, err *preflight.Error) {
	body, _ := json.Marshal(err) // only strings: never fails
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}
