package main

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight"
)

// net/http answers a request it cannot parse (a header section over
// MaxHeaderBytes, a malformed request line, a missing Host, an unknown
// Transfer-Encoding) before any handler runs, by writing a fixed plain-text
// response straight to the connection. Those answers bypass the handler, so
// the only place to give them the service's error envelope is the
// connection itself: envelopeListener wraps each accepted connection and
// rewrites exactly those writes, which net/http makes in one call and
// recognises by their fixed header block (errorHeaders below; a response
// from a handler never has it: its own headers come first).
//
// What cannot be controlled this way: a client that is still sending its
// oversized headers may see the connection reset before it reads the
// answer (net/http closes the connection right after writing it), and
// errors below HTTP (TLS, a connection closed mid-request) get no answer at
// all. The status code is kept as net/http chose it.
const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// envelopeListener wraps the connections of l in envelopeConn.
type envelopeListener struct{ net.Listener }

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return envelopeConn{c}, nil
}

// envelopeConn rewrites net/http's plain-text protocol errors as the error
// envelope.
type envelopeConn struct{ net.Conn }

func (c envelopeConn) Write(p []byte) (int, error) {
	if out, ok := rewriteProtocolError(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// rewriteProtocolError turns one of net/http's fixed error responses into
// the same status with a JSON error envelope.
func rewriteProtocolError(p []byte) ([]byte, bool) {
	statusLine, body, ok := bytes.Cut(p, []byte(errorHeaders))
	if !ok || !bytes.HasPrefix(statusLine, []byte("HTTP/1.1 ")) || bytes.ContainsAny(statusLine, "\r\n") || len(statusLine) < 12 {
		return nil, false
	}
	code, err := strconv.Atoi(string(statusLine[9:12]))
	if err != nil || code < 400 {
		return nil, false
	}
	env := &preflight.Error{Code: preflight.CodeInvalidRequest}
	switch code {
	case 431:
		env.Code = preflight.CodeLimitExceeded
		env.Message = "the request's header section is larger than " + strconv.Itoa(maxHeaderBytes) + " bytes"
	case 501:
		env.Message = "the request's Transfer-Encoding is not supported: send the body with Content-Length or chunked"
	default:
		detail := string(body)
		if _, after, found := strings.Cut(detail, ": "); found {
			detail = after
		} else {
			detail = "malformed request"
		}
		env.Message = "the request is not valid HTTP/1.1 (" + detail + ")"
	}
	b, _ := json.Marshal(env)
	reason := strings.TrimSpace(string(statusLine[12:]))
	reason, _, _ = strings.Cut(reason, ":")
	var out bytes.Buffer
	out.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + reason + "\r\n")
	out.WriteString("Content-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n")
	out.WriteString("Content-Length: " + strconv.Itoa(len(b)) + "\r\nConnection: close\r\n\r\n")
	out.Write(b)
	return out.Bytes(), true
}
