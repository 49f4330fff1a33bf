//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mcpproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// upTransport can carry the proxy's requests to a plain-HTTP upstream
// (it is not in use: see upstreamTransport for why, with figures)
// over HTTP/1.1 connections it keeps, writing each request (Request.Write)
// and reading its response (http.ReadResponse) on the caller's goroutine.
//
// http.Transport writes a request on one goroutine of its connection and
// reads the response on another, handing the request and the response
// between them and the caller over channels: on a machine with few cores
// each of those wake-ups is a measurable part of a call's latency.
//
// It never sends a request twice. A kept connection is checked before a
// request is written on it (a non-blocking peek at its socket: the
// server's close, or bytes nobody asked for, and it is closed and another
// taken or dialed); once writing began, any failure is the caller's
// error. The request's context ending closes its connection at once, as
// http.Transport closes it, whether or not anyone reads the body. What it
// does not carry goes to base: https, a host reached
// through a proxy (base.Proxy), CONNECT, requests with Expect, Upgrade or
// a client trace. (Request.Cancel, deprecated, is not watched: the proxy
// ends its requests with their contexts.)
//
// What it keeps of base: the dialer (base.DialContext), the bound on a
// response's head (base.MaxResponseHeaderBytes, net/http's default when
// zero; 1xx heads count toward it), the idle connections kept
// (MaxIdleConnsPerHost, MaxIdleConns) and how long
// (IdleConnTimeout). It does not ask for gzip (http.Transport adds
// Accept-Encoding: gzip and decodes the answer): the body the caller reads
// is the same, the bytes on the wire are not compressed.
//
// A 101 Switching Protocols answer is refused (the connection closed); any
// other 1xx is skipped. A connection is kept only after a response read to
// its end with nothing after it, when neither side asked to close, and
// while the request's context did not end; a response body closed early
// closes its connection. Kept connections are looked at every
// upPeekInterval, and those the server closed are closed too, so that
// their descriptors do not wait for the idle timeout.
type upTransport struct {
	base        *http.Transport
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxHead     int64
	maxIdle     int // kept idle in all
	maxIdleHost int
	idleTimeout time.Duration

	mu       sync.Mutex
	hosts    map[string]*upHost // by URL.Host
	idle     int                // kept idle in all
	sweeping bool               // a sweep is scheduled
}

// upMaxHosts bounds the hosts an upTransport keeps state for; requests
// to any other go to base. The proxy talks to one upstream.
const upMaxHosts = 16

// upPeekInterval is how often kept connections are looked at for the
// server's close.
const upPeekInterval = 5 * time.Second

// upHost is an upstream host of an upTransport.
type upHost struct {
	addr   string // host:port to dial
	direct bool   // not through a proxy: the transport carries its requests
	idle   []*upConn
}

// newUpstreamTransport returns the transport of the proxy's upstream
// requests over base (see upTransport).
func newUpstreamTransport(base *http.Transport) http.RoundTripper {
	t := &upTransport{base: base, dial: base.DialContext, maxHead: base.MaxResponseHeaderBytes,
		maxIdle: base.MaxIdleConns, maxIdleHost: base.MaxIdleConnsPerHost, idleTimeout: base.IdleConnTimeout,
		hosts: make(map[string]*upHost)}
	if t.dial == nil {
		t.dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	if t.maxHead <= 0 {
		t.maxHead = 10 << 20 // http.Transport's default
	}
	if t.maxIdle <= 0 {
		t.maxIdle = math.MaxInt // http.Transport: zero means no limit
	}
	if t.maxIdleHost <= 0 {
		t.maxIdleHost = http.DefaultMaxIdleConnsPerHost
	}
	return t
}

// RoundTrip implements http.RoundTripper.
func (t *upTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h := t.takes(r)
	if h == nil {
		return t.base.RoundTrip(r)
	}
	return t.roundTrip(r, h)
}

// CloseIdleConnections closes the kept connections, its own and base's.
func (t *upTransport) CloseIdleConnections() {
	var old []*upConn
	t.mu.Lock()
	for _, h := range t.hosts {
		old = append(old, h.idle...)
		clear(h.idle)
		h.idle = h.idle[:0]
	}
	t.idle = 0
	t.mu.Unlock()
	for _, c := range old {
		c.nc.Close()
	}
	t.base.CloseIdleConnections()
}

// takes returns the host of r when the transport carries r itself, or nil.
func (t *upTransport) takes(r *http.Request) *upHost {
	if r.URL == nil || r.URL.Scheme != "http" || r.URL.Host == "" || r.Method == http.MethodConnect ||
		len(r.Header["Expect"]) > 0 || len(r.Header["Upgrade"]) > 0 || httptrace.ContextClientTrace(r.Context()) != nil {
		return nil
	}
	t.mu.Lock()
	h := t.hosts[r.URL.Host]
	t.mu.Unlock()
	if h == nil {
		h = t.newHost(r)
	}
	if h == nil || !h.direct {
		return nil
	}
	return h
}

// newHost adds the host of r, or returns nil past upMaxHosts.
func (t *upTransport) newHost(r *http.Request) *upHost {
	direct := true
	if t.base.Proxy != nil {
		u, err := t.base.Proxy(r)
		direct = err == nil && u == nil
	}
	port := r.URL.Port()
	if port == "" {
		port = "80"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.hosts[r.URL.Host]; h != nil {
		return h
	}
	if len(t.hosts) >= upMaxHosts {
		return nil
	}
	h := &upHost{addr: net.JoinHostPort(r.URL.Hostname(), port), direct: direct}
	t.hosts[r.URL.Host] = h
	return h
}

// roundTrip carries r to h.
func (t *upTransport) roundTrip(r *http.Request, h *upHost) (*http.Response, error) {
	ctx := r.Context()
	if ctx.Err() != nil {
		closeBody(r)
		return nil, context.Cause(ctx)
	}
	if err := checkRequest(r); err != nil {
		closeBody(r)
		return nil, err
	}
	c, err := t.conn(ctx, h)
	if err != nil {
		closeBody(r)
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	// From here on bytes may reach the server: whatever fails is the
	// caller's error, and the request is never written again.
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.interrupt)
	}
	fail := func(err error) error {
		stop()
		c.nc.Close()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	err = r.Write(c.bw) // closes r.Body
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		return nil, fail(err)
	}
	resp, err := t.readHead(c, r)
	if err != nil {
		return nil, fail(err)
	}
	keep := c.poolable && !resp.Close && !r.Close && !hasToken(r.Header["Connection"], "close")
	if resp.Body == http.NoBody {
		// No body (HEAD, 204, 304, a zero length): the connection is free.
		t.release(h, c, stop, keep)
		return resp, nil
	}
	resp.Body = &upBody{t: t, h: h, c: c, body: resp.Body, stop: stop, ctx: ctx, keep: keep}
	return resp, nil
}

// readHead reads the response to r from c, skipping 1xx answers; the
// heads read, 1xx included, are bounded by maxHead.
func (t *upTransport) readHead(c *upConn, r *http.Request) (*http.Response, error) {
	c.lr.n = t.maxHead
	for {
		resp, err := http.ReadResponse(c.br, r)
		if err != nil {
			if c.lr.n <= 0 {
				return nil, fmt.Errorf("mcp proxy: the upstream's response head exceeds %d bytes", t.maxHead)
			}
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("mcp proxy: the upstream answered 101 Switching Protocols to a request that asked for no upgrade")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue // informational: the answer follows
		}
		c.lr.n = math.MaxInt64
		return resp, nil
	}
}

// conn returns a kept connection to h that the server has not closed, or
// a new one.
func (t *upTransport) conn(ctx context.Context, h *upHost) (*upConn, error) {
	for {
		c := t.take(h)
		if c == nil {
			break
		}
		if c.alive() {
			return c, nil
		}
		c.nc.Close()
	}
	nc, err := t.dial(ctx, "tcp", h.addr)
	if err != nil {
		return nil, err
	}
	return newUpConn(nc), nil
}

// take returns the connection to h kept last, or nil; connections kept
// longer than the idle timeout are closed.
func (t *upTransport) take(h *upHost) *upConn {
	t.mu.Lock()
	n := len(h.idle)
	if n == 0 {
		t.mu.Unlock()
		return nil
	}
	c := h.idle[n-1]
	if t.idleTimeout > 0 && time.Since(c.since) >= t.idleTimeout {
		// The last kept is the newest: all are stale.
		old := h.idle
		h.idle = nil
		t.idle -= n
		t.mu.Unlock()
		for _, c := range old {
			c.nc.Close()
		}
		return nil
	}
	h.idle[n-1] = nil
	h.idle = h.idle[:n-1]
	t.idle--
	t.mu.Unlock()
	return c
}

// release ends c's exchange: c is kept for h's next request when keep,
// the context's watch was stopped before it fired, and nothing unread is
// buffered; otherwise it is closed.
func (t *upTransport) release(h *upHost, c *upConn, stop func() bool, keep bool) {
	if !stop() || !keep || c.br.Buffered() > 0 {
		c.nc.Close()
		return
	}
	t.mu.Lock()
	if len(h.idle) >= t.maxIdleHost || t.idle >= t.maxIdle {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	c.since = time.Now()
	h.idle = append(h.idle, c)
	t.idle++
	if !t.sweeping {
		t.sweeping = true
		time.AfterFunc(upPeekInterval, t.sweep)
	}
	t.mu.Unlock()
}

// sweep closes the kept connections that the server closed, that show
// bytes nobody asked for, or that were kept past the idle timeout, and
// comes again while any is kept. Nobody uses a kept connection: its peek
// is made under the lock.
func (t *upTransport) sweep() {
	var old []*upConn
	t.mu.Lock()
	for _, h := range t.hosts {
		kept := h.idle[:0]
		for _, c := range h.idle {
			if t.idleTimeout > 0 && time.Since(c.since) >= t.idleTimeout || !c.alive() {
				old = append(old, c)
				continue
			}
			kept = append(kept, c)
		}
		clear(h.idle[len(kept):])
		h.idle = kept
	}
	t.idle -= len(old)
	t.sweeping = t.idle > 0
	if t.sweeping {
		time.AfterFunc(upPeekInterval, t.sweep)
	}
	t.mu.Unlock()
	for _, c := range old {
		c.nc.Close()
	}
}

// upConn is a connection of an upTransport.
type upConn struct {
	nc        net.Conn
	lr        limitedConn // what br reads: the head's bound
	br        *bufio.Reader
	bw        *bufio.Writer
	rc        syscall.RawConn // for the peek; nil: the connection is not kept
	poolable  bool
	since     time.Time // kept since
	interrupt func()    // ends the exchange under way (the context ended)
	peekFn    func(fd uintptr) bool
	peekBuf   [1]byte
	peekN     int
	peekErr   error
}

func newUpConn(nc net.Conn) *upConn {
	c := &upConn{nc: nc}
	c.lr.c = nc
	c.lr.n = math.MaxInt64
	c.br = bufio.NewReaderSize(&c.lr, 4<<10) // http.Transport's sizes
	c.bw = bufio.NewWriterSize(nc, 4<<10)
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rc, c.poolable = rc, true
		}
	}
	// As http.Transport does, the connection is closed at once, so that a
	// body nobody reads or closes after its context ended does not hold
	// it.
	c.interrupt = func() { nc.Close() }
	c.peekFn = c.peek
	return c
}

// alive reports whether the kept connection c is still open with nothing
// to read: a non-blocking peek at its socket finds no data, no end and no
// error.
func (c *upConn) alive() bool {
	if c.rc == nil {
		return false
	}
	c.peekN, c.peekErr = 0, nil
	if err := c.rc.Read(c.peekFn); err != nil {
		return false
	}
	return c.peekErr == syscall.EAGAIN || c.peekErr == syscall.EWOULDBLOCK
}

func (c *upConn) peek(fd uintptr) bool {
	c.peekN, _, c.peekErr = syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return true // never wait
}

// limitedConn reads c, failing once n bytes were read.
type limitedConn struct {
	c net.Conn
	n int64
}

func (l *limitedConn) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeadLimit
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	l.n -= int64(n)
	return n, err
}

var errHeadLimit = errors.New("mcp proxy: response head bound reached")

// upBody is the body of a response of an upTransport: read to its end,
// its connection is released (see upTransport.release); closed before,
// or failed, the connection is closed. Close may come from any goroutine,
// during a Read too, and more than once.
type upBody struct {
	t    *upTransport
	h    *upHost
	c    *upConn
	body io.ReadCloser // http.ReadResponse's
	stop func() bool
	ctx  context.Context
	keep bool

	closed atomic.Bool
	mu     sync.Mutex
	done   bool // the connection was released or closed
}

var errReadClosedBody = errors.New("http: read on closed response body")

func (b *upBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errReadClosedBody
	}
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		b.end(true)
	case err != nil:
		b.end(false)
		if b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		} else if b.closed.Load() {
			err = errReadClosedBody
		}
	}
	return n, err
}

// Close closes the body; its connection too, unless the body was read to
// its end.
func (b *upBody) Close() error {
	b.closed.Store(true)
	b.end(false)
	return nil
}

// end releases the connection after the body's end, or closes it.
func (b *upBody) end(eof bool) {
	b.mu.Lock()
	done := b.done
	b.done = true
	b.mu.Unlock()
	switch {
	case done:
	case eof:
		b.t.release(b.h, b.c, b.stop, b.keep)
	default:
		b.stop()
		b.c.nc.Close()
	}
}

// checkRequest refuses what http.Transport refuses before writing: a
// method or header field name that is not a token, a header value with a
// control character.
func checkRequest(r *http.Request) error {
	if r.Method != "" && !isToken(r.Method) {
		return fmt.Errorf("net/http: invalid method %q", r.Method)
	}
	for k, vs := range r.Header {
		if !isToken(k) {
			return fmt.Errorf("net/http: invalid header field name %q", k)
		}
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if b := v[i]; b < ' ' && b != '\t' || b == 0x7f {
					return fmt.Errorf("net/http: invalid header field value for %q", k)
				}
			}
		}
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0 {
			continue
		}
		return false
	}
	return true
}

// hasToken reports whether the comma-separated values vs name token.
func hasToken(vs []string, token string) bool {
	for _, v := range vs {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}
