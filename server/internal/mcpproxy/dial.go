package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPDialer connects to a Streamable HTTP MCP server at url. client nil
// means a client of the proxy's own, with http.DefaultTransport's
// settings but for the idle connections it keeps (see upstreamTransport).
//
// A response larger than the proxy's MaxResultBytes is not read whole: an
// application/json one is replaced by a JSON-RPC error for its request; in
// an event stream, a line that grows past the bound ends that request's
// stream (the call gets the error, the server notifications/cancelled).
// Either way the session goes on.
//
// Once the session is initialized, every request upstream carries the
// negotiated Mcp-Protocol-Version, and the connection listens on the
// server's standalone GET stream, so that messages the server sends outside
// any request (list-changed notifications, say) reach the client too.
func HTTPDialer(url string, client *http.Client) Dialer {
	if client == nil {
		client = &http.Client{Transport: upstreamTransport}
	}
	return func(ctx context.Context) (mcp.Connection, error) {
		max := maxResult(ctx)
		c := &httpConn{url: url, msgs: make(chan readResult, 16), done: make(chan struct{}), max: max}
		base := credTransport{base: client.Transport, cc: credsOf(ctx)}
		c.client = &http.Client{Transport: capBody{base: versionHeader{base: base, version: &c.version}, max: max},
			CheckRedirect: client.CheckRedirect, Jar: client.Jar, Timeout: client.Timeout}
		// The SDK's own bound on an event, which would end the whole
		// connection, stays above ours on a line (sseReader's too).
		t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: c.client, DisableStandaloneSSE: true,
			MaxEventSize: int(eventBound(max))}
		conn, err := t.Connect(ctx)
		if err != nil {
			return nil, err
		}
		c.Connection = conn
		go c.pump()
		return c, nil
	}
}

// upstreamTransport carries the requests to an upstream over HTTP when
// no client is given: http.DefaultTransport's settings, but keeping idle
// as many connections to a host as calls may be in flight
// (DefaultMaxCallsInFlight), where DefaultTransport keeps 2. With 2, as
// soon as more than two requests to the upstream overlap (the sessions'
// calls, their notifications) the connections returned past the second
// are closed and the next requests open new ones: a TCP connect, and
// for https a TLS handshake, added to a call's latency.
//
// A transport of the proxy's own that wrote each request and read its
// answer on the caller's goroutine was measured against this one (2
// cores, a call's latency taken as BenchmarkToolCall takes it): about
// 5 µs less on a bare hop, 15-33 µs less at p50 on a call in a new
// session, -5 to 26 µs on one in a session with 100 calls of history.
// It was not adopted: http.Transport already never sends a POST twice
// once any of it may have reached the upstream (upstream_test.go holds
// it to that and to the rest the proxy relies on).
var upstreamTransport http.RoundTripper = upstreamHTTPTransport()

// upstreamHTTPTransport is the http.Transport of upstreamTransport.
func upstreamHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = max(t.MaxIdleConns, DefaultMaxCallsInFlight)
	t.MaxIdleConnsPerHost = DefaultMaxCallsInFlight
	return t
}

// httpConn is an upstream Streamable HTTP connection that also reads the
// standalone stream.
type httpConn struct {
	mcp.Connection
	url       string
	client    *http.Client
	version   atomic.Pointer[string]
	listening atomic.Bool
	msgs      chan readResult
	done      chan struct{}
	closed    atomic.Bool
	max       int64 // bound on an event of the standalone stream
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// pump moves the messages the SDK connection reads into msgs.
func (c *httpConn) pump() {
	for {
		msg, err := c.Connection.Read(context.Background())
		select {
		case c.msgs <- readResult{msg, err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// Read returns the next message from either stream.
func (c *httpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.msgs:
		return r.msg, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, errClosedConn
	}
}

// Close closes the connection and ends the standalone stream.
func (c *httpConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		close(c.done)
	}
	return c.Connection.Close()
}

// initialized records the negotiated protocol version and starts
// listening on the standalone stream.
func (c *httpConn) initialized(version string) {
	c.version.Store(&version)
	if c.listening.CompareAndSwap(false, true) {
		go c.listen()
	}
}

// listen reads the standalone SSE stream until the connection closes,
// reconnecting after a failure; a server that does not offer the stream
// (any 4xx) is not asked again.
func (c *httpConn) listen() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-c.done; cancel() }()
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		if id := c.SessionID(); id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		resp, err := c.client.Do(req)
		if err == nil {
			if resp.StatusCode >= 400 && resp.StatusCode < 500 {
				resp.Body.Close()
				return
			}
			if resp.StatusCode == http.StatusOK {
				c.readEvents(ctx, resp)
			}
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// readEvents delivers the JSON-RPC messages of an SSE stream (see
// sseReader), until it ends or breaks the rules; an event that is not a
// message, or whose data is no JSON-RPC message, is skipped.
func (c *httpConn) readEvents(ctx context.Context, resp *http.Response) {
	var sr sseReader
	sr.reset(resp.Body, eventBound(c.max))
	for {
		ev, err := sr.next()
		if err != nil {
			return
		}
		if !ev.message() {
			continue
		}
		if msg, err := jsonrpc.DecodeMessage(ev.data); err == nil {
			select {
			case c.msgs <- readResult{msg: msg}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// versionHeader sets Mcp-Protocol-Version on requests that lack it, once
// the version is known.
type versionHeader struct {
	base    http.RoundTripper
	version *atomic.Pointer[string]
}

func (v versionHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	base := v.base
	if base == nil {
		base = http.DefaultTransport
	}
	if p := v.version.Load(); p != nil && r.Header.Get("Mcp-Protocol-Version") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Mcp-Protocol-Version", *p)
	}
	return base.RoundTrip(r)
}

// CommandDialer starts name with args for every session and speaks MCP
// with it over its standard input and output. The process ends with its
// session: its standard input is closed, then after 5 s it gets SIGTERM,
// then after 5 s more SIGKILL.
//
// A line of standard output longer than the proxy's MaxResultBytes is
// skipped, not buffered: the transport resyncs at the next newline, and
// the request it answered (its id is read from the line's head, where
// JSON-RPC encoders put it) gets a JSON-RPC error instead. A line whose
// head names no id is dropped; its call ends at the call timeout.
func CommandDialer(name string, args ...string) Dialer {
	return func(ctx context.Context) (mcp.Connection, error) {
		cmd := exec.Command(name, args...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		max := maxResult(ctx)
		t := &mcp.IOTransport{Reader: io.NopCloser(&lineCap{r: bufio.NewReaderSize(stdout, 64<<10), max: max}),
			Writer: &procStdin{WriteCloser: stdin, cmd: cmd}, MaxLineLength: int(min(max+64<<10, 1<<40))}
		return t.Connect(ctx)
	}
}

// maxResultKey is the context key under which the proxy passes its
// MaxResultBytes to its Dialer.
type maxResultKey struct{}

func maxResult(ctx context.Context) int64 {
	if n, ok := ctx.Value(maxResultKey{}).(int64); ok && n > 0 {
		return n
	}
	return DefaultMaxResultBytes
}

// procStdin is a process's standard input whose Close ends the process.
type procStdin struct {
	io.WriteCloser
	cmd  *exec.Cmd
	once sync.Once
}

func (p *procStdin) Close() error {
	err := p.WriteCloser.Close()
	p.once.Do(func() {
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		for _, sig := range []os.Signal{syscall.SIGTERM, os.Kill} {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Second):
				p.cmd.Process.Signal(sig)
			}
		}
		<-done
	})
	return err
}

// lineCap hands out the newline-delimited messages of r whole, skipping
// a line longer than max (see CommandDialer).
type lineCap struct {
	r       *bufio.Reader
	max     int64
	pending []byte
	err     error
}

func (l *lineCap) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.pending, l.err = l.line()
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// line reads the next line; an over-long one becomes a JSON-RPC error
// for the id at its head, or nothing.
func (l *lineCap) line() ([]byte, error) {
	var buf, head []byte
	over := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !over && int64(len(buf)+len(chunk)) > l.max {
			over = true
			head = append(buf, chunk...)[:min(len(buf)+len(chunk), 512)]
			buf = nil
		}
		if !over {
			buf = append(buf, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if !over {
			return buf, err
		}
		id := headID(head)
		if id == nil {
			return nil, err
		}
		return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(CodeLimit) +
			`,"message":` + strconv.Quote(tooLargeMessage(l.max)) + `}}` + "\n"), err
	}
}

// headID returns the id of a JSON-RPC response from the head of its
// encoding, when "id" comes before "result" and "error".
func headID(head []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(head))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for {
		k, err := d.Token()
		key, ok := k.(string)
		if err != nil || !ok {
			return nil
		}
		v, err := d.Token()
		if err != nil {
			return nil
		}
		switch key {
		case "jsonrpc":
		case "id":
			switch v.(type) {
			case json.Number, string:
				b, _ := json.Marshal(v)
				return b
			}
			return nil
		default:
			return nil
		}
	}
}

// capBody bounds the responses of the upstream (see HTTPDialer).
type capBody struct {
	base http.RoundTripper
	max  int64
}

func (c capBody) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	cs, _ := r.Context().Value(callKey{}).(*callState)
	if cs != nil {
		cs.hops.Add(1)
		cs.status.Store(int32(resp.StatusCode))
	}
	if baseType(resp.Header.Get("Content-Type")) == "application/json" {
		b, err := io.ReadAll(io.LimitReader(resp.Body, c.max+1))
		if err == nil && int64(len(b)) > c.max {
			resp.Body.Close()
			if cs == nil {
				return nil, fmt.Errorf("mcp proxy: %s", tooLargeMessage(c.max))
			}
			cs.tooLarge.Store(true)
			id, _ := json.Marshal(cs.id.Raw())
			b = []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(CodeLimit) +
				`,"message":` + strconv.Quote(tooLargeMessage(c.max)) + `}}`)
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			return resp, nil
		}
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(b), errReader{err}), resp.Body}
		return resp, nil
	}
	resp.Body = &lineLimit{ReadCloser: resp.Body, max: c.max, cs: cs}
	return resp, nil
}

func baseType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

type readCloser struct {
	io.Reader
	io.Closer
}

// lineLimit fails a body once a line grows past max bytes; the request it
// answers is ended through cs.
type lineLimit struct {
	io.ReadCloser
	max  int64
	line int64
	cs   *callState
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.ReadCloser.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.line = int64(n - i - 1)
	} else {
		l.line += int64(n)
	}
	if l.line > l.max {
		if l.cs != nil && l.cs.tooLarge.CompareAndSwap(false, true) {
			l.cs.cancel(errResultTooLarge)
		}
		return 0, errResultTooLarge
	}
	return n, err
}

var errResultTooLarge = errors.New("mcp proxy: an upstream message exceeds --max-result-bytes")

func tooLargeMessage(max int64) string {
	return "preflight proxy: the upstream's result exceeds " + strconv.FormatInt(max, 10) + " bytes (--max-result-bytes); it was not read"
}

// errReader returns err, or io.EOF when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}
