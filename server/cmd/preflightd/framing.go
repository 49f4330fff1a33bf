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
// framingScanner reads every byte net/http reads, and a request's header
// section naming both fields taints the connection.
// rejectAmbiguousFraming then answers each request on it 400
// invalid_request with Connection: close, which makes net/http close the
// connection after the answer.
//
// The scanner frames the stream as net/http does (RFC 9112 §6): after a
// header section comes the body that its Content-Length or chunked
// Transfer-Encoding gives, which it skips, so that no body, whatever its
// bytes, reads as a header section: one request cannot make the next one
// on its connection refused (behind a front end that reuses a connection
// for many clients, another client's). Where it cannot follow the framing
// (a length or chunk size it cannot read, a Transfer-Encoding net/http
// refuses), net/http ends the connection after that request; the
// scanner, to be safe all the same, reads every later line as a header
// line, as if no body followed any header section.

// framingScanner finds a header section naming both Content-Length and
// Transfer-Encoding in a byte stream of HTTP/1.x requests. Only the
// connection's reader calls scan; tainted may be read from any goroutine.
type framingScanner struct {
	state framingState
	left  int64 // body or chunk bytes still to skip (inBody, inData); CR LF matched (inDataEnd)

	// The line being read: its first bytes (headLen) and its last 9 (the
	// request line's version and a CR), as sent, and its length.
	head [headLen]byte
	tail [9]byte
	n    int

	// The header section being read.
	lines        int
	hasCL, hasTE bool
	teCount      int
	teChunked    bool
	clText       [20]byte // the Content-Length value, trimmed
	clLen        int
	unframed     bool // a length or encoding the scanner cannot follow
	http10       bool // the request line's version is below 1.1: Transfer-Encoding is ignored

	tainted atomic.Bool
}

// framingState is where a framingScanner is in the stream.
type framingState uint8

const (
	inHead    framingState = iota // a request's header section
	inBody                        // Content-Length bytes
	inSize                        // a chunk-size line
	inData                        // chunk data
	inDataEnd                     // the CR LF after chunk data
	inTrailer                     // the trailer section after the last chunk
	inLines                       // framing lost: every line read as a header line
)

// headLen is how much of a line the scanner keeps: a header name and a
// Content-Length or Transfer-Encoding value of any usual length, or a
// chunk size with a short extension.
const headLen = 64

func (s *framingScanner) scan(p []byte) {
	for len(p) > 0 {
		switch s.state {
		case inBody, inData:
			k := int(min(s.left, int64(len(p))))
			p, s.left = p[k:], s.left-int64(k)
			if s.left == 0 {
				if s.state == inBody {
					s.state = inHead
				} else {
					s.state = inDataEnd
				}
			}
			continue
		case inDataEnd:
			if p[0] != "\r\n"[s.left] {
				s.state, s.n = inLines, 0 // net/http fails the body
				continue
			}
			p, s.left = p[1:], s.left+1
			if s.left == 2 {
				s.state, s.n = inSize, 0
			}
			continue
		}
		// A line, or the part of it in p: keep its start and its end.
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if s.n < headLen {
			copy(s.head[s.n:], part)
		}
		s.keepTail(part)
		s.n += len(part)
		if i < 0 {
			return
		}
		p = p[i+1:]
		s.endLine()
		s.n, s.tail = 0, [len(s.tail)]byte{}
	}
}

// keepTail keeps the last bytes of the line, b its latest.
func (s *framingScanner) keepTail(b []byte) {
	if len(b) >= len(s.tail) {
		copy(s.tail[:], b[len(b)-len(s.tail):])
		return
	}
	copy(s.tail[:], s.tail[len(b):])
	copy(s.tail[len(s.tail)-len(b):], b)
}

// endLine reads the line that just ended at an LF.
func (s *framingScanner) endLine() {
	line := s.head[:min(s.n, headLen)]
	long := s.n > headLen
	cr := s.n > 0 && s.tail[len(s.tail)-1] == '\r'
	switch s.state {
	case inSize:
		s.chunkSize(line, cr)
		return
	case inTrailer:
		if s.n == 0 || s.n == 1 && cr {
			s.state = inHead
		}
		return
	}
	if s.n == 0 || s.n == 1 && cr { // an empty line ends a header section
		if s.lines > 0 && s.state == inHead {
			s.state = s.bodyState()
		}
		s.lines, s.hasCL, s.hasTE, s.teCount, s.teChunked, s.clLen, s.unframed, s.http10 = 0, false, false, 0, false, 0, false, false
		return
	}
	if cr && !long {
		line = line[:len(line)-1]
	}
	s.lines++
	request := s.lines == 1 && s.state == inHead
	if request { // read as a header line too, which can only taint; it does not frame
		v := s.tail[1:]
		if cr {
			v = s.tail[:8]
		}
		// Any letter case: net/http refuses all but HTTP/, and closes.
		s.http10 = bytes.EqualFold(v, []byte("HTTP/1.0")) || bytes.EqualFold(v[:7], []byte("HTTP/0."))
	}
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return
	}
	switch {
	case bytes.EqualFold(name, []byte("content-length")):
		s.hasCL = true
		if request {
			break
		}
		if long {
			s.unframed = true
			break
		}
		value = bytes.Trim(value, " \t")
		if s.clLen > 0 && string(value) != string(s.clText[:s.clLen]) || len(value) == 0 || len(value) > len(s.clText) {
			s.unframed = true // net/http refuses it
			break
		}
		s.clLen = copy(s.clText[:], value)
	case bytes.EqualFold(name, []byte("transfer-encoding")):
		s.hasTE = true
		if request {
			break
		}
		s.teCount++
		s.teChunked = !long && bytes.EqualFold(bytes.Trim(value, " \t"), []byte("chunked"))
	}
	if s.hasCL && s.hasTE {
		s.tainted.Store(true)
	}
}

// bodyState is where the stream goes after the header section just read:
// the body its framing gives, or the next request.
func (s *framingScanner) bodyState() framingState {
	switch {
	case s.state == inLines || s.unframed:
		return inLines
	case s.teCount > 0 && !s.http10:
		if s.teCount != 1 || !s.teChunked {
			return inLines // net/http answers 501 and closes the connection
		}
		return inSize
	case s.clLen > 0:
		var n int64
		for _, c := range s.clText[:s.clLen] {
			if c < '0' || c > '9' || n > (1<<63-1-9)/10 {
				return inLines // net/http refuses it
			}
			n = n*10 + int64(c-'0')
		}
		if n == 0 {
			return inHead
		}
		s.left = n
		return inBody
	}
	return inHead
}

// chunkSize reads a chunk-size line as net/http does: CR LF at its end
// and no CR before, hex digits, then white space or an extension.
func (s *framingScanner) chunkSize(line []byte, cr bool) {
	s.state = inLines // unless the line reads
	if !cr || s.n > headLen || bytes.IndexByte(line[:len(line)-1], '\r') >= 0 {
		return // a long line (an extension) is not followed: rare, and never tainting by itself
	}
	line = bytes.TrimRight(line[:len(line)-1], " \t")
	line, _, _ = bytes.Cut(line, []byte(";"))
	if len(line) == 0 || len(line) > 16 {
		return
	}
	var n int64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return
		}
		n = n<<4 | int64(c)
	}
	switch {
	case n < 0 || n > 1<<62: // no body is that long
	case n == 0:
		s.state = inTrailer
	default:
		s.state, s.left = inData, n
	}
}

type connKey struct{}

// connContext is the http.Servers' ConnContext hook: it puts the
// connection, preflightd's trackedConn or the proxy's framedConn, in its
// requests' contexts.
func connContext(ctx context.Context, c net.Conn) context.Context {
	switch c.(type) {
	case *trackedConn, *framedConn:
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// ambiguousFraming is the message of the answer to a request on a tainted
// connection.
const ambiguousFraming = "the request has both Content-Length and Transfer-Encoding, which frame its body two ways; send one of them (RFC 9112 section 6.1); the connection is closed"

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
			writeEnvelope(w, http.StatusBadRequest, &preflight.Error{Code: preflight.ErrorInvalidRequest, Message: ambiguousFraming})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// framedListener is the proxy's listener: each connection it accepts
// reads through a framingScanner, as those of preflightd's connLimiter do.
type framedListener struct{ net.Listener }

func (l framedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framedConn{Conn: c}, nil
}

// framedConn is a connection of a framedListener, and the reader under a
// trackedConn: the one place the stream is scanned.
type framedConn struct {
	net.Conn
	framing framingScanner // only Read touches it
}

func (c *framedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.framing.scan(p[:n])
	}
	return n, err
}

// rejectAmbiguousFramingRPC is rejectAmbiguousFraming for the proxy,
// whose answers are JSON-RPC: the error is Invalid Request (-32600) under
// the id null, since the request's own was not read.
func rejectAmbiguousFramingRPC(next http.Handler) http.Handler {
	msg, _ := json.Marshal(ambiguousFraming)
	body := []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":` + string(msg) + `}}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fc, _ := r.Context().Value(connKey{}).(*framedConn); fc != nil && fc.framing.tainted.Load() {
			h := w.Header()
			h.Set("Connection", "close")
			h.Set("Content-Type", "application/json")
			h.Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(http.StatusBadRequest)
			w.Write(body)
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
