package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/x402"
)

// route is one path of the service: a handler per method.
type route struct {
	methods   map[string]http.HandlerFunc
	allow     string       // the Allow header of a 405, such as "GET, HEAD"
	anyMethod http.Handler // when set, serves every method (the MCP transport)
}

// handler is the http.Handler returned by New.
type handler struct {
	cfg        Config
	log        *slog.Logger
	routes     map[string]*route
	paywall    *x402.Paywall // nil when unpaid or misconfigured
	paywallErr error         // why the configured paywall could not be built
	site       *site
	openAPI    []byte // the OpenAPI document, with the configured operations
	gate       *gate  // bounds concurrent evaluation
}

// New returns the handler that serves every route of the service as
// configured by cfg. It does no I/O. A Payment configuration that
// [Payment.Validate] rejects is logged once and makes the paid route answer 503
// payment_unavailable; it never makes the route unpaid.
func New(cfg Config) http.Handler {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cfg.SiteURL = strings.TrimRight(cfg.SiteURL, "/")
	h := &handler{cfg: cfg, log: withRequestIDs(cfg.Logger), site: newSite(cfg.Catalog), openAPI: openAPIFor(cfg.Catalog), gate: newGate()}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	in := newInstrumentation(cfg, h.log)
	if cfg.Payment != nil {
		pc := cfg.Payment.config(withRequestIDs(cfg.Logger))
		in.instrumentPayment(&pc)
		if d := cfg.Drain; d != nil {
			observe := pc.Observe
			pc.Observe = func(ctx context.Context, o x402.Outcome) {
				observe(ctx, o)
				d.note(ctx, o)
			}
		}
		pw, err := x402.New(pc)
		if err != nil {
			h.paywallErr = err
			h.log.Error("payment is configured but invalid; the paid route will answer 503", "error", err.Error())
		} else {
			h.paywall = pw
		}
	}
	h.routes = map[string]*route{}
	post := http.MethodPost
	h.handle("/check-request", post, h.serveCheck)
	h.handle("/v0.2/preflight/tool-call", post, h.serveToolCall)
	h.handle("/v0.2/usage/dump", post, serveUsageDump)
	h.handle("/health", http.MethodGet, serveHealth)
	h.handle("/openapi.json", http.MethodGet, h.serveOpenAPI)
	h.handle(pathOperationsSchema, http.MethodGet, serveOperationsSchema)
	h.handle(pathReceiptKeys, http.MethodGet, h.serveReceiptKeys)
	h.routes["/mcp"] = &route{anyMethod: newMCPHandler(cfg, in, h.gate)}
	for _, p := range sitePaths {
		h.handle(p, http.MethodGet, h.serveSite)
	}
	return in.wrap(h)
}

// handle registers fn for method on path. A GET route also answers HEAD.
func (h *handler) handle(path, method string, fn http.HandlerFunc) {
	rt := h.routes[path]
	if rt == nil {
		rt = &route{methods: map[string]http.HandlerFunc{}}
		h.routes[path] = rt
	}
	rt.methods[method] = fn
	if method == http.MethodGet {
		rt.methods[http.MethodHead] = fn
	}
	names := make([]string, 0, len(rt.methods))
	for m := range rt.methods {
		names = append(names, m)
	}
	slices.Sort(names)
	rt.allow = strings.Join(names, ", ")
}

// ServeHTTP routes r by exact path, then by method.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.log.ErrorContext(r.Context(), "handler panicked", "path", r.URL.Path, "panic", fmt.Sprint(v))
			writeError(w, &preflight.Error{Code: ErrorInternalError, Message: "the server failed to handle the request; this is a bug"})
		}
	}()
	rt := h.routes[r.URL.Path]
	if rt == nil {
		writeError(w, &preflight.Error{
			Code:    ErrorNotFound,
			Message: fmt.Sprintf("no route for path %q; see /openapi.json for the routes", r.URL.Path),
		})
		return
	}
	if rt.anyMethod != nil {
		rt.anyMethod.ServeHTTP(w, r)
		return
	}
	fn := rt.methods[r.Method]
	if fn == nil {
		w.Header().Set("Allow", rt.allow)
		writeError(w, &preflight.Error{
			Code:    ErrorMethodNotAllowed,
			Message: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, rt.allow),
		})
		return
	}
	fn(w, r)
}

// baseURL is the API base URL for r: Config.BaseURL, or derived from the
// request's Host.
func (h *handler) baseURL(r *http.Request) string {
	if h.cfg.BaseURL != "" {
		return h.cfg.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// siteURL is the site base URL for r: Config.SiteURL, or the base URL.
func (h *handler) siteURL(r *http.Request) string {
	if h.cfg.SiteURL != "" {
		return h.cfg.SiteURL
	}
	return h.baseURL(r)
}
