package mcpproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Scopes. The guard's state (ledger, budget, call limit, saved results and
// the calls it answers once) belongs to a scope: a principal (who calls,
// from the request's context, see server/internal/identity) and a run,
// named by the run handle the client sends with each request, in
// params._meta under RunMetaKey or in the RunHeader header. A request
// without a run handle belongs to its legacy session's own run when it
// has a session, else to the principal's default run. Both protocol
// generations share the scopes: a session and stateless requests with the
// same principal and run handle spend one budget and see one history.
//
// A session's own run is reachable only through the session and ends with
// it; every other scope ends when it has had no request for the scope idle
// timeout. At most MaxScopes exist at once.
const (
	// RunHeader is the HTTP header that carries a request's run handle.
	RunHeader = "Preflight-Run"
	// RunMetaKey is the params._meta member that carries a request's run
	// handle; it wins over RunHeader, and the two must agree when both are
	// sent.
	RunMetaKey = "io.agentpreflight/run"
	// MaxRunHandle bounds a run handle's length in bytes.
	MaxRunHandle = 200
)

// DefaultMaxScopes bounds the scopes at once: twice DefaultMaxSessions,
// room for every session's own run and as many named runs again. A scope
// holds a guard (a ledger of at most preflight.MaxHistory entries and the
// tool list, some tens of KiB); its saved results are in the result store,
// bounded on its own.
const DefaultMaxScopes = 2 * DefaultMaxSessions

// scopeKey names a scope. run is "run:" and the client's handle, "session:"
// and a session id for a session's own run, or "" for the principal's
// default run; the prefixes keep a client's handle from naming a session.
type scopeKey struct {
	principal, run string
}

// scope is the guard state of one principal's run.
type scope struct {
	key    scopeKey
	guard  *mcpguard.Session
	end    func()       // ends its shared state here (Options.ScopeState), or nil
	calls  atomic.Int64 // its stateless requests in flight, bounded as a session's
	active atomic.Int64 // its requests being served
	last   atomic.Int64 // when the last one ended, in Unix nanoseconds
}

func (sc *scope) busy(d int64) {
	sc.active.Add(d)
	sc.last.Store(time.Now().UnixNano())
}

func (sc *scope) idleFor() time.Duration {
	if sc.active.Load() > 0 {
		return 0
	}
	return time.Since(time.Unix(0, sc.last.Load()))
}

// close ends the scope's guard here, and its shared state's work in this
// proxy (the shared state itself stays, for other proxies).
func (sc *scope) close() {
	sc.guard.Close()
	if sc.end != nil {
		sc.end()
	}
}

// ofSession reports whether the scope is a session's own run.
func (k scopeKey) ofSession() bool { return len(k.run) > 8 && k.run[:8] == "session:" }

// runHandle returns the run handle of a request: params._meta's RunMetaKey
// or the RunHeader of h, "" for none. A handle that is not a string of 1
// to MaxRunHandle visible ASCII characters, or a header that differs from
// _meta's, is an invalid-params error.
func runHandle(h http.Header, params json.RawMessage) (string, *jsonrpc.Error) {
	return readHead(params).runHandle(h)
}

// runHandle is runHandle of params whose head p is.
func (p callHead) runHandle(h http.Header) (string, *jsonrpc.Error) {
	header := ""
	if h != nil {
		header = h.Get(RunHeader)
	}
	raw, inMeta := p.Meta[RunMetaKey]
	if !inMeta {
		if header == "" {
			return "", nil
		}
		if e := checkHandle(header, RunHeader+" header"); e != nil {
			return "", e
		}
		return header, nil
	}
	var meta string
	if json.Unmarshal(raw, &meta) != nil {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "_meta " + strconv.Quote(RunMetaKey) + " must be a string (the run handle)"}
	}
	if e := checkHandle(meta, "_meta "+strconv.Quote(RunMetaKey)); e != nil {
		return "", e
	}
	if header != "" && header != meta {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the " + RunHeader + " header " + strconv.Quote(header) +
			" differs from _meta " + strconv.Quote(RunMetaKey) + " " + strconv.Quote(meta)}
	}
	return meta, nil
}

func checkHandle(s, where string) *jsonrpc.Error {
	ok := len(s) >= 1 && len(s) <= MaxRunHandle
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] > ' ' && s[i] < 0x7f
	}
	if ok {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: where + ": a run handle is 1 to " + strconv.Itoa(MaxRunHandle) +
		" visible ASCII characters (no spaces)"}
}

// keyOf returns the scope key of a request of principal with run handle
// handle, in session (a session id, "" for a stateless request).
func keyOf(principal, handle, session string) scopeKey {
	switch {
	case handle != "":
		return scopeKey{principal, "run:" + handle}
	case session != "":
		return scopeKey{principal, "session:" + session}
	}
	return scopeKey{principal, ""}
}

// scopeFor returns the scope of key, made on first use, or the refusal
// when MaxScopes exist already.
func (p *Proxy) scopeFor(key scopeKey) (*scope, *jsonrpc.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sc := p.scopes[key]; sc != nil {
		return sc, nil
	}
	if len(p.scopes) >= p.opts.MaxScopes {
		return nil, &jsonrpc.Error{Code: CodeLimit, Message: fmt.Sprintf("preflight proxy: scope limit reached: %d runs are being guarded (set by --max-scopes); retry later", p.opts.MaxScopes)}
	}
	o := p.opts.Guard
	// An approval's requestState is valid for its principal and run only.
	o.Approvals.Principal, o.Approvals.Run = key.principal, key.run
	var end func()
	if p.opts.ScopeState != nil {
		var err error
		if end, err = p.opts.ScopeState(key.principal, key.run, &o); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "preflight proxy: the run's shared state could not be opened: " + err.Error()}
		}
	}
	if p.opts.ScopeGuard != nil {
		o = p.opts.ScopeGuard(key.principal, o)
	}
	g, err := mcpguard.NewSession(&o)
	if err != nil {
		if end != nil {
			end()
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "preflight proxy: the guard could not start: " + err.Error()}
	}
	sc := &scope{key: key, guard: g, end: end}
	sc.last.Store(time.Now().UnixNano())
	p.scopes[key] = sc
	p.log.Info("mcp proxy: scope started", scopeAttrs(key)...)
	return sc, nil
}

// scopeAttrs are the log attributes of a scope: its principal, and its run
// handle or session only as a digest.
func scopeAttrs(k scopeKey) []any {
	run := "default"
	if k.run != "" {
		run = logID(k.run)
	}
	return []any{"principal", k.principal, "run", run}
}

// endScope drops the scope sc of key, and its saved results.
func (p *Proxy) endScope(key scopeKey, sc *scope, why string) {
	p.mu.Lock()
	if p.scopes[key] != sc {
		p.mu.Unlock()
		return
	}
	delete(p.scopes, key)
	p.mu.Unlock()
	sc.close()
	p.log.Info("mcp proxy: scope ended", append(append(scopeAttrs(key), "reason", why), spentAttrs(sc.guard)...)...)
}

// existingScope returns the scope of key, or nil.
func (p *Proxy) existingScope(key scopeKey) *scope {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.scopes[key]
}

// Scopes returns the number of scopes.
func (p *Proxy) Scopes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.scopes)
}
