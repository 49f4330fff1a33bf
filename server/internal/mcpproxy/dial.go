package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPDialer connects to a Streamable HTTP MCP server at url. client nil
// means http.DefaultClient.
//
// Once the session is initialized, every request upstream carries the
// negotiated Mcp-Protocol-Version, and the connection listens on the
// server's standalone GET stream, so that messages the server sends outside
// any request (list-changed notifications, say) reach the client too.
func HTTPDialer(url string, client *http.Client) Dialer {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context) (mcp.Connection, error) {
		c := &httpConn{url: url, msgs: make(chan readResult, 16), done: make(chan struct{})}
		c.client = &http.Client{Transport: versionHeader{base: client.Transport, version: &c.version},
			CheckRedirect: client.CheckRedirect, Jar: client.Jar, Timeout: client.Timeout}
		t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: c.client, DisableStandaloneSSE: true}
		conn, err := t.Connect(ctx)
		if err != nil {
			return nil, err
		}
		c.Connection = conn
		go c.pump()
		return c, nil
	}
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

// readEvents delivers the JSON-RPC messages of an SSE stream.
func (c *httpConn) readEvents(ctx context.Context, resp *http.Response) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20) // grows from 4 KiB as events need: one stream per session
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if data.Len() > 0 {
				if msg, err := jsonrpc.DecodeMessage(data.Bytes()); err == nil {
					select {
					case c.msgs <- readResult{msg: msg}:
					case <-ctx.Done():
						return
					}
				}
				data.Reset()
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
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
// session.
func CommandDialer(name string, args ...string) Dialer {
	return func(ctx context.Context) (mcp.Connection, error) {
		cmd := exec.Command(name, args...)
		return (&mcp.CommandTransport{Command: cmd}).Connect(ctx)
	}
}
