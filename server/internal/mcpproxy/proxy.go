// Package mcpproxy is the MCP guarding proxy of preflightd: it serves
// Streamable HTTP, opens one upstream MCP connection per session, forwards
// every message both ways as it came, and answers tools/call through an
// mcpguard.Session, so that each MCP session gets its own ledger, budget
// and call limit.
package mcpproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Dialer opens a new connection to the upstream MCP server, one per
// downstream session.
type Dialer func(ctx context.Context) (mcp.Connection, error)

// Options configures a [Proxy].
type Options struct {
	// Dial opens upstream connections. Required.
	Dial Dialer
	// Guard configures each session's guard.
	Guard mcpguard.Options
	// Logger receives session starts, ends and upstream failures; nil
	// means slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes limits a POST body; 0 means 4 MiB.
	MaxBodyBytes int64
	// IdleTimeout ends a session (and its upstream connection) that has
	// had no HTTP request for this long; 0 means never.
	IdleTimeout time.Duration
	// TrustHost accepts any Host header. By default a request that reached
	// a loopback address with a Host that is not a loopback name is refused
	// (403), which stops a web page from driving a local proxy through DNS
	// rebinding; set it behind a reverse proxy that sends its own Host.
	TrustHost bool

	// Bounds on tool calls (see bounds.go); zero means the Default….
	// MaxCallsInFlightPerSession and MaxCallsInFlight bound the tools/call
	// being answered in one session and across sessions: one more is
	// refused at once with a JSON-RPC error. CallTimeout bounds the wait
	// for the upstream's answer to a call. MaxResultBytes bounds one
	// message from the upstream: a larger result is not read, and the
	// call gets a JSON-RPC error.
	MaxCallsInFlightPerSession int
	MaxCallsInFlight           int
	CallTimeout                time.Duration
	MaxResultBytes             int64
}

// Proxy is an http.Handler serving the MCP Streamable HTTP transport in
// front of an upstream server.
type Proxy struct {
	opts Options
	log  *slog.Logger
	b    *bounds
	ctx  context.Context // ends every session when cancelled
	stop context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*session
}

// New returns a proxy. Close it to end every session.
func New(opts Options) *Proxy {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &Proxy{opts: opts, log: opts.Logger, ctx: ctx, stop: stop, sessions: make(map[string]*session), b: newBounds(&opts)}
	if opts.IdleTimeout > 0 {
		go p.reapIdle()
	}
	return p
}

// reapIdle ends the sessions idle for longer than IdleTimeout, until the
// proxy is closed.
func (p *Proxy) reapIdle() {
	every := min(p.opts.IdleTimeout/4, time.Minute)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		var idle []*session
		p.mu.Lock()
		for _, s := range p.sessions {
			if s.idleFor() > p.opts.IdleTimeout {
				idle = append(idle, s)
			}
		}
		p.mu.Unlock()
		for _, s := range idle {
			p.log.Info("mcp proxy: closing an idle session", "session", s.down.SessionID, "idle", p.opts.IdleTimeout.String())
			s.close()
		}
	}
}

// Close ends every session and closes their upstream connections.
func (p *Proxy) Close() error {
	p.stop()
	p.mu.Lock()
	ss := make([]*session, 0, len(p.sessions))
	for _, s := range p.sessions {
		ss = append(ss, s)
	}
	p.mu.Unlock()
	for _, s := range ss {
		s.close()
	}
	return nil
}

// Sessions returns the number of open sessions.
func (p *Proxy) Sessions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// Session returns the guard of the session id, or nil.
func (p *Proxy) Session(id string) *mcpguard.Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sessions[id]; s != nil {
		return s.guard
	}
	return nil
}

const sessionHeader = "Mcp-Session-Id"

// ServeHTTP serves one request of the Streamable HTTP transport. An
// initialize whose upstream cannot be reached, or ends before it answers,
// gets 502 with a JSON-RPC error carrying the request's id.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.opts.TrustHost && !hostAllowed(r) {
		http.Error(w, "Forbidden: invalid Host header", http.StatusForbidden)
		return
	}
	if id := r.Header.Get(sessionHeader); id != "" {
		p.mu.Lock()
		s := p.sessions[id]
		p.mu.Unlock()
		if s == nil {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		s.busy(1)
		defer s.busy(-1)
		switch r.Method {
		case http.MethodDelete:
			s.close()
			w.WriteHeader(http.StatusNoContent)
		case http.MethodGet, http.MethodPost:
			r.Body = http.MaxBytesReader(w, r.Body, p.opts.MaxBodyBytes)
			s.serve(w, r)
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
		return
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodGet, http.MethodDelete:
		http.Error(w, "Bad Request: missing "+sessionHeader+" header", http.StatusBadRequest)
		return
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.opts.MaxBodyBytes))
	if err != nil {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &head) // a batch or garbage leaves head empty
	switch head.Method {
	case "initialize":
	case "server/discover":
		// This proxy keeps state per session, which the sessionless
		// 2026-07-28 protocol has no place for: a client that asks falls
		// back to the initialize handshake.
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(head.ID) + `,"error":{"code":-32601,"message":"server/discover is not served by this proxy; use initialize"}}`))
		return
	default:
		http.Error(w, "Bad Request: the first request of a session must be initialize (no "+sessionHeader+" header)", http.StatusBadRequest)
		return
	}
	s, err := p.open()
	if err != nil {
		p.log.Error("mcp proxy: upstream connection failed", "err", err)
		badGateway(w, head.ID, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.busy(1)
	defer s.busy(-1)
	// An HTTP upstream is first reached when initialize is forwarded, and
	// a stdio one may exit before it answers: then the session ends with
	// nothing written, and the client gets the same 502 as for an
	// upstream that could not be dialled.
	aw := &answerWriter{ResponseWriter: w}
	s.down.ServeHTTP(aw, r)
	if !aw.wrote.Load() && s.ctx.Err() != nil {
		err := s.upstreamErr()
		if err == nil {
			err = errors.New("the session ended before the upstream answered initialize")
		}
		for _, h := range []string{"Cache-Control", "Connection", sessionHeader} {
			w.Header().Del(h)
		}
		badGateway(w, head.ID, err)
	}
}

// badGateway answers the request id with 502 and a JSON-RPC error saying
// that the upstream is unreachable, and why.
func badGateway(w http.ResponseWriter, id json.RawMessage, err error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	msg, _ := json.Marshal("the upstream MCP server is unreachable: " + err.Error())
	w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32603,"message":` + string(msg) + `}}`))
}

// answerWriter notes whether anything of the response was written.
type answerWriter struct {
	http.ResponseWriter
	wrote atomic.Bool
}

func (a *answerWriter) WriteHeader(code int) {
	a.wrote.Store(true)
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerWriter) Write(b []byte) (int, error) {
	a.wrote.Store(true)
	return a.ResponseWriter.Write(b)
}

func (a *answerWriter) Flush() {
	a.wrote.Store(true)
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// hostAllowed reports whether r may be served: any Host on a non-loopback
// listener, a loopback name on a loopback one.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	ip := net.ParseIP(hostOnly(local.String()))
	if ip == nil || !ip.IsLoopback() {
		return true
	}
	h := hostOnly(r.Host)
	if h == "localhost" {
		return true
	}
	hip := net.ParseIP(h)
	return hip != nil && hip.IsLoopback()
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// open starts a session: a downstream transport, an upstream connection
// and the pumps between them.
func (p *Proxy) open() (*session, error) {
	g, err := mcpguard.NewSession(&p.opts.Guard)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(p.ctx)
	up, err := p.opts.Dial(context.WithValue(ctx, maxResultKey{}, p.b.maxResult))
	if err != nil {
		cancel()
		return nil, err
	}
	down := &mcp.StreamableServerTransport{SessionID: rand.Text()}
	dc, err := down.Connect(ctx)
	if err != nil {
		cancel()
		up.Close()
		return nil, err
	}
	s := newSession(ctx, cancel, down, dc, up, g, p.log)
	s.b = p.b
	p.mu.Lock()
	p.sessions[down.SessionID] = s
	p.mu.Unlock()
	p.log.Info("mcp proxy: session started", "session", down.SessionID)
	go func() {
		s.run()
		p.mu.Lock()
		delete(p.sessions, down.SessionID)
		p.mu.Unlock()
		p.log.Info("mcp proxy: session ended", "session", down.SessionID, "spentUsd", string(g.Agent().Guard().SpentUSD()))
	}()
	return s, nil
}

var errClosedConn = errors.New("mcp proxy: upstream connection closed")
