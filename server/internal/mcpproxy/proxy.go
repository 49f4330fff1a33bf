// Package mcpproxy is the MCP guarding proxy of preflightd: it serves
// Streamable HTTP, opens one upstream MCP connection per session, forwards
// every message both ways as it came, and answers tools/call through an
// mcpguard.Session per scope, a principal's run (see scope.go), so that
// each run gets its own ledger, budget and call limit whichever protocol
// generation carries its calls.
package mcpproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/server/internal/identity"
	"github.com/agentpreflight/preflight/server/internal/reqid"
	"github.com/agentpreflight/preflight/server/internal/rpcid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Dialer opens a new connection to the upstream MCP server, one per
// downstream session.
type Dialer func(ctx context.Context) (mcp.Connection, error)

// Options configures a [Proxy]. Every bound has a safe default: the zero
// Options bound sessions, clients, bodies and idle handshakes.
type Options struct {
	// Dial opens upstream connections. Required.
	Dial Dialer
	// UpstreamURL is the upstream's Streamable HTTP URL when it has one
	// (what HTTPDialer dials). Requests of the stateless 2026-07-28
	// revision are forwarded there, one POST each (see serveStateless).
	// Empty, as for a command upstream, means they go through the
	// stateless bridge over one long-lived connection from Dial (see
	// bridge.go).
	UpstreamURL string
	// Guard configures each scope's guard.
	Guard mcpguard.Options
	// ScopeGuard, when set, returns the guard options of a new scope of
	// principal from Guard: the hook for what a principal's runs share
	// (a LedgerStore shared by them spends one budget) or what one
	// principal may do.
	ScopeGuard func(principal string, guard mcpguard.Options) mcpguard.Options
	// ScopeState, when set, is called for a new scope before ScopeGuard:
	// it puts the scope's state in a store several proxies share into
	// guard (its LedgerStore, Results and Claims) and returns what to call
	// when the scope ends in this proxy, which must leave the shared
	// state to the others. run is the scope's run as scope.go names it:
	// "run:" and the client's handle, "session:" and a session id, or ""
	// for the principal's default run.
	ScopeState func(principal, run string, guard *mcpguard.Options) (end func(), err error)
	// MaxScopes bounds the scopes (a principal's runs, see scope.go)
	// guarded at once; a request that needs one more gets a JSON-RPC
	// error (503 for a stateless request). 0 means DefaultMaxScopes.
	MaxScopes int
	// ScopeIdleTimeout ends a scope (its ledger and saved results) that
	// has had no request for this long, but a session's own, which ends
	// with its session. 0 means IdleTimeout; both 0, never.
	ScopeIdleTimeout time.Duration
	// Logger receives session starts, ends and upstream failures; nil
	// means slog.Default(). Session ids appear only as a digest (see
	// the "session" attribute): the id is the session's credential.
	Logger *slog.Logger
	// MaxBodyBytes limits a POST body; 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxBatch bounds the messages of one JSON-RPC batch in a POST body;
	// a longer batch gets 413 before any of it is decoded. 0 means
	// DefaultMaxBatch.
	MaxBatch int
	// BodyTimeout bounds the reading of a POST body (not of a GET
	// stream): a body not received in time gets 408 and the connection is
	// closed. 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout ends a session (and its upstream connection) that has
	// had no HTTP request for this long; 0 means never.
	IdleTimeout time.Duration
	// InitTimeout ends a session that has had no HTTP request since its
	// initialize for this long, whatever IdleTimeout says. 0 means
	// DefaultInitTimeout.
	InitTimeout time.Duration
	// MaxSessions bounds the sessions open at once; an initialize past it
	// gets 503 with Retry-After. 0 means DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerClient bounds the sessions open at once from one
	// remote IP address, or IPv6 /64 (that of the connection: headers
	// such as X-Forwarded-For are never read); an initialize past it gets
	// 429 with Retry-After. 0 means DefaultMaxSessionsPerClient.
	MaxSessionsPerClient int
	// MaxProcesses, when above 0, bounds the upstream connections alive
	// at once, the sessions' and the stateless bridge's, each counted until
	// its Close has returned: for a [CommandDialer], until its process has
	// exited. An initialize past it gets 503 with Retry-After, and so
	// does a stateless request that needs the bridge's connection started
	// (a stateless tools/call gets a JSON-RPC error). 0 means no bound but
	// MaxSessions.
	MaxProcesses int
	// AllowOrigins lists the web origins (scheme://host[:port], see
	// [NormalizeOrigin]) whose browser requests are served. A request
	// whose Origin header is anything else gets 403; one without Origin
	// (a client that is not a browser) is served. Entries that are not
	// origins match nothing.
	AllowOrigins []string
	// TrustHost accepts any Host header. By default a request that reached
	// a loopback address with a Host that is not a loopback name is refused
	// (403), which stops a web page from driving a local proxy through DNS
	// rebinding; set it behind a reverse proxy that sends its own Host.
	TrustHost bool

	// Bounds on tool calls (see calls.go); zero means the Default….
	// MaxCallsInFlightPerSession, MaxCallsInFlightPerClient and
	// MaxCallsInFlight bound the tools/call being answered in one session,
	// in the sessions of one remote address and across sessions: one more
	// is refused at once with a JSON-RPC error. CallTimeout bounds the wait
	// for the upstream's answer to a call. MaxResultBytes bounds one
	// message from the upstream: a larger result is not read, and the
	// call gets a JSON-RPC error.
	MaxCallsInFlightPerSession int
	MaxCallsInFlightPerClient  int
	MaxCallsInFlight           int
	CallTimeout                time.Duration
	MaxResultBytes             int64

	// OnToolsList, when set, gets every page of the upstream's tools/list
	// result the proxy reads (cursor "" for the first page), as the
	// upstream sent it, for checks of the configuration against it. It
	// must not keep result.
	OnToolsList func(cursor string, result json.RawMessage)

	// ToolAllowed, when set, says whether principal may see and call
	// tool: a tool it may not is left out of its tools/list answers and
	// its tools/call is answered as an unknown tool, never decided nor
	// forwarded (see policy.go). Nil allows every tool.
	ToolAllowed func(principal, tool string) bool

	// OnCall, when set, is told of every tools/call when it arrives (see
	// observe.go) and returns the call's context (a span's, say) and the
	// function that gets the call's record once it is answered, exactly
	// once. Both run on the call's goroutine and must not block.
	OnCall func(ctx context.Context, c CallStart) (context.Context, func(CallRecord))
	// CallMeta, when set, returns members to add to params._meta of a
	// tools/call forwarded upstream, from the call's context (the one
	// OnCall returned): W3C trace context, say. The guard sees the call as
	// the client sent it.
	CallMeta func(ctx context.Context) map[string]string

	// Credentials, when set, authenticate the proxy's requests to an HTTP
	// upstream (see [Credentials]); nil sends none.
	Credentials *Credentials
}

// Proxy is an http.Handler serving the MCP Streamable HTTP transport in
// front of an upstream server. It is safe for concurrent use.
type Proxy struct {
	opts     Options
	log      *slog.Logger
	origins  map[string]bool // normalized AllowOrigins
	ctx      context.Context // ends every session when cancelled
	stop     context.CancelFunc
	draining atomic.Bool
	inflight atomic.Int64 // requests being served but GET streams
	b        *bounds      // on tool calls

	mu        sync.Mutex
	sessions  map[string]*entry
	opening   int                 // sessions being opened, counted against MaxSessions
	perClient map[string]int      // open and opening sessions by remote address
	procs     int                 // upstream connections not yet closed (with MaxProcesses)
	scopes    map[scopeKey]*scope // guard state by principal and run

	hc *http.Client // for stateless requests to UpstreamURL, bounded by MaxResultBytes
	br bridge       // for stateless requests without UpstreamURL (bridge.go)

	ending sync.WaitGroup // the goroutines that end sessions, awaited by Close
}

// entry is an open session and what the bounds need to know of it.
type entry struct {
	s         *session
	client    string      // the remote address that opened it
	principal string      // who opened it (identity.Principal)
	creds     *connCreds  // of its upstream connection
	used      atomic.Bool // a request came after initialize
}

// New returns a proxy. Close it to end every session.
func New(opts Options) *Proxy {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.InitTimeout <= 0 {
		opts.InitTimeout = DefaultInitTimeout
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessionsPerClient <= 0 {
		opts.MaxSessionsPerClient = DefaultMaxSessionsPerClient
	}
	if opts.MaxScopes <= 0 {
		opts.MaxScopes = DefaultMaxScopes
	}
	if opts.ScopeIdleTimeout <= 0 {
		opts.ScopeIdleTimeout = opts.IdleTimeout
	}
	origins := make(map[string]bool)
	for _, o := range opts.AllowOrigins {
		if n, err := NormalizeOrigin(o); err == nil {
			origins[n] = true
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &Proxy{opts: opts, log: opts.Logger, origins: origins, ctx: ctx, stop: stop,
		sessions: make(map[string]*entry), perClient: make(map[string]int), b: newBounds(&opts),
		scopes: make(map[scopeKey]*scope)}
	p.hc = &http.Client{Transport: capBody{base: upstreamTransport, max: p.b.maxResult}}
	go p.reap()
	return p
}

// reap ends the sessions idle for longer than IdleTimeout, and those with
// no request since initialize for longer than InitTimeout, until the
// proxy is closed.
func (p *Proxy) reap() {
	every := min(p.opts.InitTimeout/4, time.Minute)
	if p.opts.IdleTimeout > 0 {
		every = min(every, p.opts.IdleTimeout/4)
	}
	if p.opts.ScopeIdleTimeout > 0 {
		every = min(every, p.opts.ScopeIdleTimeout/4)
	}
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		type expired struct {
			s   *session
			why string
		}
		var ended []expired
		p.mu.Lock()
		for _, e := range p.sessions {
			switch idle := e.s.idleFor(); {
			case !e.used.Load() && idle > p.opts.InitTimeout:
				ended = append(ended, expired{e.s, "no request after initialize"})
			case p.opts.IdleTimeout > 0 && idle > p.opts.IdleTimeout:
				ended = append(ended, expired{e.s, "idle"})
			}
		}
		var idleScopes []*scope
		for key, sc := range p.scopes {
			if !key.ofSession() && p.opts.ScopeIdleTimeout > 0 && sc.idleFor() > p.opts.ScopeIdleTimeout {
				idleScopes = append(idleScopes, sc)
			}
		}
		p.mu.Unlock()
		for _, sc := range idleScopes {
			p.endScope(sc.key, sc, "idle")
		}
		for _, x := range ended {
			p.log.Info("mcp proxy: closing a session", "session", logID(x.s.down.SessionID), "reason", x.why,
				"sessionIdle", p.opts.IdleTimeout.String(), "sessionInitTimeout", p.opts.InitTimeout.String())
			x.s.close()
		}
	}
}

// Drain makes the proxy answer every request from now on with 503 and
// Retry-After, so that clients go elsewhere or come back later, and waits
// until the requests already being served (every one but GET streams,
// which never end on their own) have been answered, or ctx is done; then it
// returns ctx.Err(). Open sessions stay open until Close. Call it when
// shutdown begins, once the listener has stopped accepting.
func (p *Proxy) Drain(ctx context.Context) error {
	p.draining.Store(true)
	for p.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// Close ends every session and closes their upstream connections, all at
// once, and returns when they are closed (a command upstream's process
// has exited).
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.stop() // under mu: open registers a session for Close to await only before this
	ss := make([]*session, 0, len(p.sessions))
	for _, e := range p.sessions {
		ss = append(ss, e.s)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(s.close)
	}
	wg.Go(p.br.close)
	wg.Wait()
	p.ending.Wait() // every session's end logged and its run closed
	p.mu.Lock()
	scopes := p.scopes
	p.scopes = make(map[scopeKey]*scope)
	p.mu.Unlock()
	for _, sc := range scopes {
		sc.close()
	}
	return nil
}

// Sessions returns the number of open sessions.
func (p *Proxy) Sessions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// HasSession reports whether the session id is open.
func (p *Proxy) HasSession(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[id] != nil
}

const sessionHeader = "Mcp-Session-Id"

// ServeHTTP serves one request of the Streamable HTTP transport. Refusals
// come before anything else: while draining, 503; a foreign Host on a
// loopback listener or an Origin not allowed, 403; a POST whose
// Content-Type is not application/json, 415; a body not received within
// BodyTimeout, 408; an initialize past MaxSessions or MaxProcesses, 503,
// past MaxSessionsPerClient, 429. Each is a JSON-RPC error saying which
// bound was hit, with the request's id when it was read. An initialize
// whose upstream cannot be reached, or ends before it answers, gets 502
// with a JSON-RPC error carrying the request's id.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every request gets an id, on the answer and for the calls it carries
	// (the transport hands the request's header along with each message).
	rid := reqid.New(r.Header.Get(reqid.Header))
	r.Header.Set(reqid.Header, rid)
	w.Header().Set(reqid.Header, rid)
	jw := &jsonErrors{ResponseWriter: w}
	defer jw.done()
	w = jw
	if r.Method != http.MethodGet {
		// Counted before draining is read, so that Drain, which sets it
		// first, sees every request that was let through.
		p.inflight.Add(1)
		defer p.inflight.Add(-1)
	}
	switch {
	case p.draining.Load():
		w.Header().Set("Connection", "close")
		refuse(w, http.StatusServiceUnavailable, nil, codeLimit, "the proxy is shutting down; retry later")
		return
	case !p.opts.TrustHost && !hostAllowed(r):
		refuse(w, http.StatusForbidden, nil, codeInvalidRequest,
			"Host "+strconv.Quote(r.Host)+" is not a loopback name on a loopback listener (DNS-rebinding protection; --trust-proxy-host turns it off behind a reverse proxy)")
		return
	case !originAllowed(r, p.origins):
		refuse(w, http.StatusForbidden, nil, codeInvalidRequest,
			"Origin "+strconv.Quote(r.Header.Get("Origin"))+" is not allowed (allow it with --allow-origin)")
		return
	case r.Method == http.MethodPost && !jsonContent(r):
		refuse(w, http.StatusUnsupportedMediaType, nil, codeInvalidRequest,
			"Content-Type "+strconv.Quote(r.Header.Get("Content-Type"))+" is not application/json")
		return
	}
	var body []byte
	if r.Method == http.MethodPost {
		var ok bool
		if body, ok = p.readBody(w, r); !ok {
			return
		}
		if n := batchLen(body, p.opts.MaxBatch); n > p.opts.MaxBatch {
			refuse(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest,
				"a JSON-RPC batch of more than "+strconv.Itoa(p.opts.MaxBatch)+" messages (set by --max-batch)")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if id := r.Header.Get(sessionHeader); id != "" {
		p.mu.Lock()
		e := p.sessions[id]
		p.mu.Unlock()
		// A session serves the principal that opened it: to anyone else
		// it does not exist (a session id is no credential of its own).
		if e == nil || e.principal != identity.Principal(r.Context()) {
			refuse(w, http.StatusNotFound, nil, codeInvalidRequest, "session not found")
			return
		}
		e.used.Store(true)
		if a := r.Header.Get("Authorization"); a != "" {
			e.creds.auth.Store(&a)
		}
		s := e.s
		s.busy(1)
		defer s.busy(-1)
		switch r.Method {
		case http.MethodDelete:
			s.close()
			w.WriteHeader(http.StatusNoContent)
		case http.MethodGet, http.MethodPost:
			s.serve(w, r, body)
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			refuse(w, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "method "+strconv.Quote(r.Method)+" not allowed: use GET, POST or DELETE")
		}
		return
	}
	switch r.Method {
	case http.MethodPost:
	case http.MethodGet, http.MethodDelete:
		refuse(w, http.StatusBadRequest, nil, codeInvalidRequest, "Bad Request: missing "+sessionHeader+" header")
		return
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		refuse(w, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "method "+strconv.Quote(r.Method)+" not allowed: use GET, POST or DELETE")
		return
	}
	// headID is the id errors are answered under: the member named
	// exactly "id", as the SDK reads it (none for a batch or garbage).
	headID, bad := rpcid.FirstUnsafe(body)
	if bad {
		refuse(w, http.StatusBadRequest, rpcid.Echo(headID), codeInvalidRequest, rpcid.Rule)
		return
	}
	// Read as the upstream's SDK and the downstream transport read it
	// (member names in exact case).
	msg, derr := jsonrpc.DecodeMessage(body)
	req, _ := msg.(*jsonrpc.Request)
	if derr != nil {
		req = nil
	}
	if req != nil && isStateless(r, msg) {
		// Forwarded as it came, so never when two readers could take it
		// for two messages.
		if err := mcpguard.CheckMessage(body); err != nil {
			writeRPC(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: codeInvalidRequest,
				Message: "the message is not forwarded: " + err.Error() + " (a message forwarded as it came must read the same to every reader: " +
					"each member once, names that differ in more than case, valid UTF-8, at most 1000 levels deep)"})
			return
		}
		p.serveStateless(w, r, body, req)
		return
	}
	switch {
	case derr != nil:
		refuse(w, http.StatusBadRequest, headID, codeInvalidRequest, "Bad Request: the body is not a JSON-RPC 2.0 message ("+derr.Error()+")")
		return
	case req == nil || req.Method != "initialize":
		refuse(w, http.StatusBadRequest, headID, codeInvalidRequest, "Bad Request: the first request of a session must be initialize (no "+sessionHeader+" header)")
		return
	}
	client := clientOf(r)
	if status, msg := p.admit(client); status != 0 {
		refuse(w, status, headID, codeLimit, msg)
		return
	}
	s, cc, err := p.open(client, identity.Principal(r.Context()), r.Header.Get("Authorization"))
	if err != nil {
		p.log.Error("mcp proxy: upstream connection failed", "err", err)
		badGateway(w, headID, err)
		return
	}
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
		if d := cc.denial.Load(); d != nil {
			// The upstream wants other credentials: the client is told
			// as the upstream told the proxy.
			writeDenial(w, headID, d)
			return
		}
		badGateway(w, headID, err)
		return
	}
	if aw.status.Load() >= 400 || s.initFailed.Load() {
		// The transport refused the initialize (a header it does not take,
		// say), or the upstream answered it with an error or not in time:
		// nothing can use the session; it ends now rather than at the
		// init timeout, and its upstream process with it.
		s.close()
	}
}

// readBody reads a POST body of at most MaxBodyBytes within BodyTimeout.
// When it cannot, it answers (413, 408 or 400) and returns false.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(p.opts.BodyTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.opts.MaxBodyBytes))
	if err == nil {
		if deadline {
			rc.SetReadDeadline(time.Time{}) // the rest of the exchange (an SSE answer) is not bounded by it
		}
		return body, true
	}
	if deadline {
		// Past deadline: net/http would otherwise wait for the rest of
		// the body to discard it, holding the connection for a client
		// that stalls.
		rc.SetReadDeadline(time.Now())
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		w.Header().Set("Connection", "close")
		refuse(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest,
			"request body larger than "+strconv.FormatInt(p.opts.MaxBodyBytes, 10)+" bytes")
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		refuse(w, http.StatusRequestTimeout, nil, codeLimit,
			"request body not received within "+p.opts.BodyTimeout.String()+" (set by --body-timeout)")
	default:
		w.Header().Set("Connection", "close")
		refuse(w, http.StatusBadRequest, nil, codeInvalidRequest, "request body unreadable")
	}
	return nil, false
}

// admit reserves room for one more session of client, or returns the
// status and message of the bound that is full.
func (p *Proxy) admit(client string) (int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch { // the client's own bound first: it is the one the client can act on
	case p.perClient[client] >= p.opts.MaxSessionsPerClient:
		return http.StatusTooManyRequests, fmt.Sprintf("per-client session limit reached: this address has %d sessions open (set by --max-sessions-per-client); end one (DELETE) or retry later", p.opts.MaxSessionsPerClient)
	case len(p.sessions)+p.opening >= p.opts.MaxSessions:
		return http.StatusServiceUnavailable, fmt.Sprintf("session limit reached: %d sessions are open (set by --max-sessions); retry later", p.opts.MaxSessions)
	case p.opts.MaxProcesses > 0 && p.procs >= p.opts.MaxProcesses:
		return http.StatusServiceUnavailable, p.procLimitError().Error()
	}
	p.opening++
	p.perClient[client]++
	p.procs++
	return 0, ""
}

// errProcLimit is wrapped by the error of a bridge dial refused at
// MaxProcesses.
var errProcLimit = errors.New("upstream process limit reached")

// procLimitError says that MaxProcesses upstream processes are running.
func (p *Proxy) procLimitError() error {
	return fmt.Errorf("%w: %d upstream processes are running (set by --max-processes); retry later", errProcLimit, p.opts.MaxProcesses)
}

// takeProc reserves room for one more upstream process outside a session
// (the stateless bridge's), false when MaxProcesses are running.
func (p *Proxy) takeProc() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opts.MaxProcesses > 0 && p.procs >= p.opts.MaxProcesses {
		return false
	}
	p.procs++
	return true
}

// giveProc gives back what takeProc reserved.
func (p *Proxy) giveProc() {
	p.mu.Lock()
	p.procs--
	p.mu.Unlock()
}

// release gives back what admit reserved for a session of client: id ""
// for one that failed to open, else the id of the session that ended.
func (p *Proxy) release(client, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id == "" {
		p.opening--
	} else {
		delete(p.sessions, id)
	}
	p.procs--
	if p.perClient[client]--; p.perClient[client] <= 0 {
		delete(p.perClient, client)
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

// answerWriter notes whether anything of the response was written, and
// the status.
type answerWriter struct {
	http.ResponseWriter
	wrote  atomic.Bool
	status atomic.Int32 // the status written, 0 before
}

func (a *answerWriter) WriteHeader(code int) {
	a.wrote.Store(true)
	a.status.CompareAndSwap(0, int32(code))
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

// open starts a session of client for principal, for which admit made
// room: a downstream transport, an upstream connection (with the caller's
// authorization, when it is forwarded) and the pumps between them.
func (p *Proxy) open(client, principal, authorization string) (*session, *connCreds, error) {
	ctx, cancel := context.WithCancel(p.ctx)
	cc := &connCreds{creds: p.opts.Credentials}
	cc.auth.Store(&authorization)
	up, err := p.opts.Dial(context.WithValue(context.WithValue(ctx, maxResultKey{}, p.b.maxResult), connCredsKey{}, cc))
	if err != nil {
		cancel()
		p.release(client, "")
		return nil, nil, err
	}
	down := &mcp.StreamableServerTransport{SessionID: rand.Text()}
	dc, err := down.Connect(ctx)
	if err != nil {
		cancel()
		up.Close()
		p.release(client, "")
		return nil, nil, err
	}
	s := newSession(ctx, cancel, down, dc, up, p.log)
	s.b = p.b
	s.onList = p.opts.OnToolsList
	s.peer = p.b.client(client)
	s.p, s.principal = p, principal
	p.mu.Lock()
	p.opening--
	p.sessions[down.SessionID] = &entry{s: s, client: client, principal: principal, creds: cc}
	// Close, which stops p first, waits for the ends of the sessions it
	// finds; one opened after that is not awaited.
	awaited := p.ctx.Err() == nil
	if awaited {
		p.ending.Add(1)
	}
	p.mu.Unlock()
	tag := logID(down.SessionID)
	p.log.Info("mcp proxy: session started", "session", tag)
	go func() {
		if awaited {
			defer p.ending.Done()
		}
		s.run() // returns once the upstream connection is closed
		p.b.leave(client, s.peer)
		p.release(client, down.SessionID)
		p.log.Info("mcp proxy: session ended", "session", tag)
		// The session's own run goes with it, and its saved results.
		key := keyOf(principal, "", down.SessionID)
		if sc := p.existingScope(key); sc != nil {
			p.endScope(key, sc, "session ended")
		}
	}()
	return s, cc, nil
}

// sawList hands a page of the upstream's tools to Options.OnToolsList.
func (p *Proxy) sawList(cursor string, result json.RawMessage) {
	if p.opts.OnToolsList != nil {
		p.opts.OnToolsList(cursor, result)
	}
}

// spentAttrs are the log attributes of what g's run spent: spentUsd, or
// spentUsdError when its store could not say.
func spentAttrs(g *mcpguard.Session) []any {
	spent, err := g.Agent().Guard().SpentUSD(context.Background())
	if err != nil {
		return []any{"spentUsdError", err.Error()}
	}
	return []any{"spentUsd", string(spent)}
}

var errClosedConn = errors.New("mcp proxy: upstream connection closed")
