package mcpproxy

import (
	"net/http"
	"strconv"

	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/agentpreflight/preflight/server/internal/identity"
)

// What an auditor needs to check the proxy's receipts offline: the keys
// that signed them (receipt.KeysPath) and the catalog the calls were
// decided with (CatalogPath), which a guard builds from the upstream's
// tools/list and the configured specs, so that nothing but the proxy
// knows it. Both are served only when the proxy signs receipts.

// CatalogPath is where the proxy serves the catalog a run decides with,
// as a tool-spec file that preflight verify --operations reads.
const CatalogPath = "/.well-known/preflight-catalog"

// ServeReceiptKeys answers GET receipt.KeysPath: the key document of
// Guard.Receipts (see receipt.WriteKeys), or 404 when the proxy signs no
// receipts. The Host and Origin checks of ServeHTTP apply.
func (p *Proxy) ServeReceiptKeys(w http.ResponseWriter, r *http.Request) {
	if !p.auditRequest(w, r) {
		return
	}
	receipt.WriteKeys(w, p.opts.Guard.Receipts)
}

// ServeCatalog answers GET CatalogPath with the catalog that the caller's
// run decides with now, written by tools.EncodeSpecs: the tools of the
// upstream's tools/list with the configured specs, as the run's guard
// built them, "builtins": false. The run is the one a tools/call would be
// guarded in: the principal's (from the request's context), named by the
// Preflight-Run header, else the session's own when Mcp-Session-Id names
// one of the principal's sessions, else the principal's default run. Tools
// the principal may not see (Options.ToolAllowed) are left out, as from
// its tools/list (an operation's aliases too; an operation one of whose
// aliases is allowed stays under its name). A run that does not exist here (no request of it yet, or
// ended) gets 404, as does every request when the proxy signs no
// receipts. The catalog changes when the upstream's list does: it is the
// one that decided a receipt when fetched after the call and before the
// list changed.
func (p *Proxy) ServeCatalog(w http.ResponseWriter, r *http.Request) {
	if !p.auditRequest(w, r) {
		return
	}
	principal := identity.Principal(r.Context())
	handle := r.Header.Get(RunHeader)
	if handle != "" {
		if e := checkHandle(handle, RunHeader+" header"); e != nil {
			refuse(w, http.StatusBadRequest, nil, codeInvalidRequest, e.Message)
			return
		}
	}
	session := r.Header.Get(sessionHeader)
	if session != "" && handle == "" {
		p.mu.Lock()
		e := p.sessions[session]
		p.mu.Unlock()
		if e == nil || e.principal != principal {
			refuse(w, http.StatusNotFound, nil, codeInvalidRequest, "session not found")
			return
		}
	}
	sc := p.existingScope(keyOf(principal, handle, session))
	if sc == nil {
		refuse(w, http.StatusNotFound, nil, codeInvalidRequest,
			"no such run is guarded here: its catalog exists from its first request until it ends (send the run's "+RunHeader+" or "+sessionHeader+" header)")
		return
	}
	set := sc.guard.Agent().Tools()
	var specs []tools.Spec
	for _, s := range set.Specs() {
		if p.opts.ToolAllowed == nil {
			specs = append(specs, s)
			continue
		}
		// An operation stays when a name of it is allowed, with the
		// allowed aliases only: the others are never decided.
		var aliases []string
		for _, a := range s.Operation.Aliases {
			if p.opts.ToolAllowed(principal, a) {
				aliases = append(aliases, a)
			}
		}
		if len(aliases) > 0 || p.opts.ToolAllowed(principal, s.Operation.Name) {
			s.Operation.Aliases = aliases
			specs = append(specs, s)
		}
	}
	file, err := tools.EncodeSpecs(specs)
	if err != nil {
		refuse(w, http.StatusInternalServerError, nil, codeInvalidRequest, "the run's catalog cannot be written as a tool-spec file: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(file)
}

// auditRequest applies to the audit routes the refusals of ServeHTTP that
// concern them (a foreign Host on a loopback listener, an Origin not
// allowed), the method (GET or HEAD) and the signing key; it answers and
// returns false when the request is refused.
func (p *Proxy) auditRequest(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		w.Header().Set("Allow", "GET, HEAD")
		refuse(w, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "method "+strconv.Quote(r.Method)+" not allowed: use GET")
	case !p.opts.TrustHost && !hostAllowed(r):
		refuse(w, http.StatusForbidden, nil, codeInvalidRequest,
			"Host "+strconv.Quote(r.Host)+" is not a loopback name on a loopback listener (DNS-rebinding protection; --trust-proxy-host turns it off behind a reverse proxy)")
	case !originAllowed(r, p.origins):
		refuse(w, http.StatusForbidden, nil, codeInvalidRequest,
			"Origin "+strconv.Quote(r.Header.Get("Origin"))+" is not allowed (allow it with --allow-origin)")
	case p.opts.Guard.Receipts == nil:
		refuse(w, http.StatusNotFound, nil, codeInvalidRequest, "this proxy signs no receipts: it was started without --signing-key")
	default:
		return true
	}
	return false
}
