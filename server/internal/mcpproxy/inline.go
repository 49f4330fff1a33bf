package mcpproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// inlineTransport carries requests to a plain-HTTP upstream over HTTP/1.1
// connections it keeps, writing each request and reading its response on
// the caller's goroutine. http.Transport hands every request to a
// connection's writing goroutine and its response back from the reading
// one: two goroutine switches per call, a sizeable part of a call's
// latency on a busy machine. Requests it does not take (https, an
// upstream reached through an HTTP proxy from the environment, anything
// but a POST with a known length) go to base.
type inlineTransport struct {
	base    http.RoundTripper
	dialer  net.Dialer
	maxIdle int

	mu   sync.Mutex
	idle map[string][]*inlineConn // by host:port, the most recent last
}

// inlineConn is a kept connection.
type inlineConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

func newInlineTransport(base http.RoundTripper, maxIdle int) *inlineTransport {
	return &inlineTransport{base: base, maxIdle: maxIdle, idle: make(map[string][]*inlineConn),
		dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
}

// takes reports whether r is one the transport carries itself.
func (t *inlineTransport) takes(r *http.Request) bool {
	if r.URL.Scheme != "http" || r.Method != http.MethodPost || r.ContentLength <= 0 || r.GetBody == nil || r.Close {
		return false
	}
	if u, err := http.ProxyFromEnvironment(r); err != nil || u != nil {
		return false
	}
	return true
}

func (t *inlineTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.takes(r) {
		return t.base.RoundTrip(r)
	}
	addr := r.URL.Host
	if r.URL.Port() == "" {
		addr = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	for attempt := 0; ; attempt++ {
		ic, reused := t.get(addr)
		if ic == nil {
			c, err := t.dialer.DialContext(r.Context(), "tcp", addr)
			if err != nil {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: err}
			}
			ic = &inlineConn{c: c, br: bufio.NewReaderSize(c, 32<<10), bw: bufio.NewWriterSize(c, 4<<10)}
		}
		resp, err := t.exchange(r, ic)
		if err == nil {
			return resp, nil
		}
		ic.c.Close()
		// A kept connection the server closed meanwhile fails before any
		// answer: the request is sent once more on another.
		if !reused || attempt > 0 || r.Context().Err() != nil || !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		body, gerr := r.GetBody()
		if gerr != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.Body = body
	}
}

// exchange writes r on ic and reads the response head. The connection
// ends with r's context while the exchange and the body's reading last.
func (t *inlineTransport) exchange(r *http.Request, ic *inlineConn) (*http.Response, error) {
	stop := context.AfterFunc(r.Context(), func() { ic.c.SetDeadline(time.Unix(1, 0)) })
	if err := r.Write(ic.bw); err != nil {
		stop()
		return nil, err
	}
	if err := ic.bw.Flush(); err != nil {
		stop()
		return nil, err
	}
	resp, err := http.ReadResponse(ic.br, r)
	if err != nil {
		stop()
		if ctxErr := r.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	resp.Body = &inlineBody{t: t, ic: ic, body: resp.Body, stop: stop, addr: r.URL.Host, keep: !resp.Close, ctx: r.Context()}
	return resp, nil
}

// get returns a kept connection to addr, or nil.
func (t *inlineTransport) get(addr string) (*inlineConn, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.idle[addr]
	if len(cs) == 0 {
		return nil, false
	}
	ic := cs[len(cs)-1]
	cs[len(cs)-1] = nil
	t.idle[addr] = cs[:len(cs)-1]
	return ic, true
}

// put keeps ic for the next request to addr, or closes it.
func (t *inlineTransport) put(addr string, ic *inlineConn) {
	t.mu.Lock()
	if len(t.idle[addr]) < t.maxIdle {
		t.idle[addr] = append(t.idle[addr], ic)
		ic = nil
	}
	t.mu.Unlock()
	if ic != nil {
		ic.c.Close()
	}
}

// inlineBody is a response body: read to its end, its connection is kept;
// closed before, the connection is closed.
type inlineBody struct {
	t    *inlineTransport
	ic   *inlineConn
	body io.ReadCloser
	stop func() bool
	addr string
	keep bool
	ctx  context.Context

	mu   sync.Mutex
	done bool
	eof  bool
}

func (b *inlineBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
	} else if err != nil && b.ctx.Err() != nil {
		err = b.ctx.Err()
	}
	return n, err
}

func (b *inlineBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil
	}
	b.done = true
	stopped := b.stop()
	if b.eof && b.keep && stopped && b.ic.br.Buffered() == 0 {
		b.ic.c.SetDeadline(time.Time{})
		b.t.put(b.addr, b.ic)
		return nil
	}
	return b.ic.c.Close()
}
