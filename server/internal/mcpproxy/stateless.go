package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/server/internal/identity"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stateless revision of MCP (2026-07-28) has no initialize and no
// session: every request carries its protocol version and the client's
// capabilities in params._meta, and over HTTP in the Mcp-Protocol-Version,
// Mcp-Method and Mcp-Name headers. Such a request reaches the proxy as a
// POST without Mcp-Session-Id, and is served by serveStateless: the proxy
// checks the headers against the body, then forwards the POST, body and
// Mcp-* headers as they came, to the upstream's URL, and streams the
// answer back as it came (status, JSON or event stream) — but a tools/call,
// which the guard answers, forwarding it only when the call should run.
// Whatever the proxy does not judge (results of every kind, resultType
// "input_required" with its requestState, ttlMs and cacheScope, the Tasks
// extension's fields, subscriptions/listen streams) passes untouched.
// Without an upstream URL (a command upstream), post hands the request to
// the stateless bridge (bridge.go), which answers as such an upstream
// would.
const (
	hdrVersion = "Mcp-Protocol-Version"
	hdrMethod  = "Mcp-Method"
	hdrName    = "Mcp-Name"

	// statelessRevision is the first revision without sessions.
	statelessRevision = "2026-07-28"
	// metaVersion is the params._meta key of a request's revision.
	metaVersion = "io.modelcontextprotocol/protocolVersion"
)

// CodeHeaderMismatch is the JSON-RPC error code of a request whose
// Mcp-Method or Mcp-Name header does not match its body (2026-07-28).
const CodeHeaderMismatch = -32020

// legacyRevisions are the revisions of the initialize handshake, which the
// proxy serves with sessions: those a client falls back to when the
// stateless revision cannot be bridged.
var legacyRevisions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// isStateless reports whether msg, which came without Mcp-Session-Id, is a
// request of the stateless revision: its Mcp-Protocol-Version header names
// 2026-07-28 or a later-sorting revision (an unknown one the upstream must
// refuse itself; an initialize sent so is the upstream's to refuse too,
// with method not found), or it is not initialize and is server/discover
// or carries a revision in params._meta.
func isStateless(r *http.Request, msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	switch {
	case !ok:
		return false
	case r.Header.Get(hdrVersion) >= statelessRevision:
		return true
	case req.Method == "initialize":
		return false
	}
	return req.Method == "server/discover" || requestRevision(req.Params) != ""
}

// requestRevision returns params._meta's protocol version, or "".
func requestRevision(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var v string
	if json.Unmarshal(params, &p) == nil {
		json.Unmarshal(p.Meta[metaVersion], &v)
	}
	return v
}

// checkHeaders compares the Mcp-Method and Mcp-Name headers with the body,
// as the go-sdk's server does (both required from 2026-07-28 on; Mcp-Name
// for tools/call, prompts/get and resources/read), before anything is
// decided or forwarded.
func checkHeaders(h http.Header, req *jsonrpc.Request) error {
	if h.Get(hdrVersion) < statelessRevision {
		return nil
	}
	m := h.Get(hdrMethod)
	switch {
	case m == "":
		return errors.New("missing required Mcp-Method header")
	case m != req.Method:
		return fmt.Errorf("header mismatch: Mcp-Method header value %q does not match body value %q", m, req.Method)
	}
	member := map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}[req.Method]
	if member == "" {
		return nil
	}
	n := h.Get(hdrName)
	if n == "" {
		return fmt.Errorf("missing required Mcp-Name header for method %q", req.Method)
	}
	var p map[string]json.RawMessage
	var body string
	if json.Unmarshal(req.Params, &p) != nil || json.Unmarshal(p[member], &body) != nil {
		return fmt.Errorf("failed to extract name from parameters for method %q", req.Method)
	}
	if n != body {
		return fmt.Errorf("header mismatch: Mcp-Name header value %q does not match body value %q", n, body)
	}
	return nil
}

// serveStateless serves one POST of the stateless revision (see the
// comment at the top of this file).
func (p *Proxy) serveStateless(w http.ResponseWriter, r *http.Request, body []byte, req *jsonrpc.Request) {
	if err := checkHeaders(r.Header, req); err != nil {
		writeRPC(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: CodeHeaderMismatch, Message: err.Error()})
		return
	}
	// tools/call and tools/list have a scope: the guard answers the one
	// and takes in the other. The calls in flight are bounded per scope
	// (as per session), per remote address and in all.
	var sc *scope
	own := new(atomic.Int64)
	if req.IsCall() && (req.Method == "tools/call" || req.Method == "tools/list") {
		handle, e := runHandle(r.Header, req.Params)
		if e != nil {
			if req.Method == "tools/call" {
				_, ob := p.observe(r.Context(), p.statelessStart(r, req, nil))
				ob.refused(e)
			}
			writeRPC(w, http.StatusBadRequest, req.ID, e)
			return
		}
		var refusal *jsonrpc.Error
		if sc, refusal = p.scopeFor(keyOf(identity.Principal(r.Context()), handle, "")); refusal != nil {
			if req.Method == "tools/call" {
				_, ob := p.observe(r.Context(), p.statelessStart(r, req, nil))
				ob.refused(refusal)
			}
			status := http.StatusInternalServerError
			if refusal.Code == CodeLimit {
				status = http.StatusServiceUnavailable
				w.Header().Set("Retry-After", retryAfter)
			}
			writeRPC(w, status, req.ID, refusal)
			return
		}
		own = &sc.calls
		sc.busy(1)
		defer sc.busy(-1)
	}
	client := clientOf(r)
	peer := p.b.client(client)
	if req.IsCall() {
		if refusal := p.b.admit(own, peer, "for this run"); refusal != nil {
			p.b.leave(client, peer)
			if req.Method == "tools/call" {
				_, ob := p.observe(r.Context(), p.statelessStart(r, req, sc))
				ob.refused(refusal)
			}
			writeRPC(w, http.StatusOK, req.ID, refusal)
			return
		}
	}
	done := func() {
		if req.IsCall() {
			p.b.release(own, peer)
		}
		p.b.leave(client, peer)
	}
	if req.Method == "tools/call" && req.IsCall() {
		p.statelessCall(w, r, body, req, sc, done)
		return
	}
	defer done()
	p.statelessForward(w, r, body, req, sc)
}

// rawID returns the JSON text of id, nil for a notification.
func rawID(id jsonrpc.ID) json.RawMessage {
	if !id.IsValid() {
		return nil
	}
	b, _ := json.Marshal(id.Raw())
	return b
}

// writeRPC answers id with a JSON-RPC error as one application/json body.
func writeRPC(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	data, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// unsupported answers with the UnsupportedProtocolVersion error naming the
// legacy revisions, which a client of the stateless revision falls back
// to (with initialize, through the proxy's sessions).
func unsupported(w http.ResponseWriter, id jsonrpc.ID, requested, why string) {
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: legacyRevisions, Requested: requested})
	writeRPC(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion,
		Message: "protocol version " + strconv.Quote(requested) + " is not supported through this proxy: " + why, Data: data})
}

// statusOf is the HTTP status of a JSON-RPC error under the stateless
// revision, as the go-sdk's server sets it.
func statusOf(e *jsonrpc.Error) int {
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities, CodeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// forwarded reports whether the client's header k goes upstream: the
// media types and the Mcp-* headers of the request, none of the client's
// credentials or cookies.
func forwarded(k string) bool {
	switch k = http.CanonicalHeaderKey(k); k {
	case "Content-Type", "Accept", hdrVersion, hdrMethod, hdrName:
		return true
	}
	return strings.HasPrefix(k, "Mcp-Param-")
}

// post sends body upstream with the forwarded headers of h.
func (p *Proxy) post(ctx context.Context, h http.Header, body []byte) (*http.Response, error) {
	if p.opts.UpstreamURL == "" {
		return p.bridgePost(ctx, h, body) // a command upstream (bridge.go)
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, p.opts.UpstreamURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range h {
		if forwarded(k) {
			up.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	if err := p.opts.Credentials.setHeaders(up.Header, h.Get("Authorization")); err != nil {
		return nil, err
	}
	return p.hc.Do(up)
}

// statelessForward forwards a request (or notification) that is not a
// tools/call and streams the answer back as it came. A request but
// subscriptions/listen (a stream the client holds open) is bounded by the
// call timeout. A tools/list answer in JSON is taken in by the guard; a
// server/discover answered as by a server without the stateless revision
// becomes the UnsupportedProtocolVersion error, so that the client falls
// back to initialize.
func (p *Proxy) statelessForward(w http.ResponseWriter, r *http.Request, body []byte, req *jsonrpc.Request, sc *scope) {
	ctx := r.Context()
	if req.IsCall() && req.Method != "subscriptions/listen" {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, p.b.callTimeout, errCallTimeout)
		defer stop()
	}
	resp, err := p.post(ctx, r.Header, body)
	if err != nil {
		p.upstreamFailure(w, ctx, req, err)
		return
	}
	defer resp.Body.Close()
	if d := denialOf(resp); d != nil {
		writeDenial(w, rawID(req.ID), d)
		return
	}
	isJSON := baseType(resp.Header.Get("Content-Type")) == "application/json"
	filter := req.Method == "tools/list" && p.opts.ToolAllowed != nil
	if req.Method == "server/discover" || req.Method == "tools/list" && (isJSON || filter) {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			p.upstreamFailure(w, ctx, req, err)
			return
		}
		if req.Method == "server/discover" && legacyAnswer(resp.StatusCode, b) {
			unsupported(w, req.ID, requestRevision(req.Params), "the upstream MCP server does not serve server/discover (it answered HTTP "+
				strconv.Itoa(resp.StatusCode)+"); it speaks only the initialize handshake")
			return
		}
		if m, err := jsonrpc.DecodeMessage(b); err == nil && req.Method == "tools/list" && sc != nil {
			if res, ok := m.(*jsonrpc.Response); ok && res.Error == nil {
				sc.guard.SawToolsList(listCursor(req.Params), res.Result)
				p.sawList(listCursor(req.Params), res.Result)
			}
		}
		if filter {
			principal := identity.Principal(r.Context())
			if isJSON {
				b = p.filterMessage(principal, b)
			} else {
				b = p.filterStream(principal, b)
			}
			resp.Header.Del("Content-Length")
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	for _, k := range []string{"Content-Type", "Cache-Control"} {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}

	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// legacyAnswer reports whether the answer to server/discover is that of a
// server without the stateless revision: method not found, as a JSON-RPC
// error or as an HTTP error that is not JSON-RPC at all. (A server that
// knows the revision but not the version asked for answers
// UnsupportedProtocolVersion itself, which passes as it came.)
func legacyAnswer(status int, body []byte) bool {
	m, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return status >= 400
	}
	res, ok := m.(*jsonrpc.Response)
	var e *jsonrpc.Error
	return ok && errors.As(res.Error, &e) && e.Code == jsonrpc.CodeMethodNotFound
}

// listCursor returns the cursor of tools/list params, "" for none.
func listCursor(params json.RawMessage) string {
	var p struct {
		Cursor string `json:"cursor"`
	}
	json.Unmarshal(params, &p)
	return p.Cursor
}

// upstreamFailure answers a request whose upstream POST failed: the
// timeout's error, the result bound's, or 502.
func (p *Proxy) upstreamFailure(w http.ResponseWriter, ctx context.Context, req *jsonrpc.Request, err error) {
	switch {
	case errors.Is(context.Cause(ctx), errCallTimeout):
		writeRPC(w, http.StatusOK, req.ID, p.b.timeoutError(req.Method))
	case tooLarge(err, p.b.maxResult):
		writeRPC(w, http.StatusOK, req.ID, p.b.tooLargeError())
	case ctx.Err() != nil:
		// The client went away; nobody reads an answer.
	case errors.Is(err, errProcLimit):
		refuse(w, http.StatusServiceUnavailable, rawID(req.ID), codeLimit, strings.TrimPrefix(err.Error(), "dial stdio: "))
	default:
		badGateway(w, rawID(req.ID), err)
	}
}

// tooLarge reports whether err says an upstream message outgrew the bound
// max (capBody's two ways of saying it).
func tooLarge(err error, max int64) bool {
	return errors.Is(err, errResultTooLarge) || strings.Contains(err.Error(), tooLargeMessage(max))
}

// statelessCall answers a tools/call of the stateless revision through the
// scope's guard, within the call timeout. When the call runs, the POST goes
// upstream as it came; notifications the upstream sends on the call's
// stream (progress, say) are relayed to the client as they arrive, which
// turns the answer into an event stream; the result, or the error, ends
// it.
//
// The call is not the client's stream's: a client whose stream breaks
// re-issues the call with a new id (2026-07-28), so the call goes on when
// the client goes away, until it ends or the call timeout passes, and the
// re-issued call joins it or gets its answer (see mcpguard.Session's
// CallTool). done is called when it has ended.
func (p *Proxy) statelessCall(w http.ResponseWriter, r *http.Request, body []byte, req *jsonrpc.Request, sc *scope, done func()) {
	ev := &events{w: w}
	type answer struct {
		result json.RawMessage
		err    error
		ctx    context.Context
		denied *Denial // the upstream refused the caller: 401 or 403
	}
	answered := make(chan answer, 1)
	sc.busy(1) // until the call ends, not the request
	go func() {
		defer done()
		defer sc.busy(-1)
		ctx, stop := context.WithTimeoutCause(context.WithoutCancel(r.Context()), p.b.callTimeout, errCallTimeout)
		defer stop()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ctx, ob := p.observe(ctx, p.statelessStart(r, req, sc))
		go func() { // the proxy's close ends it too
			select {
			case <-p.ctx.Done():
				cancel()
			case <-ctx.Done():
			}
		}()
		if name, _, err := mcpguard.ReadCallParams(req.Params); err == nil && sc.guard.NeedsList(name) {
			p.statelessList(ctx, r.Header, req.Params, sc)
		}
		if refusal := p.policyRefusal(sc, req.Params); refusal != nil {
			ob.refused(refusal)
			answered <- answer{nil, refusal, ctx, nil}
			return
		}
		var denied *Denial
		result, err := sc.guard.CallToolExtra(ctx, req.Params, paramHeaders(r.Header), func(ctx context.Context) (json.RawMessage, error) {
			since := time.Now()
			tctx, sent := withSentTrace(ctx)
			resp, err := p.post(tctx, r.Header, p.withMetaBody(ctx, body, req))
			if err != nil {
				ob.upstream(nil, 0, since)
				return nil, outcomeOf(ctx, err, p.b.maxResult, sent)
			}
			defer resp.Body.Close()
			if denied = denialOf(resp); denied != nil {
				ob.upstream(nil, resp.StatusCode, since)
				return nil, notRun{fmt.Errorf("the upstream answered HTTP %d", resp.StatusCode)}
			}
			res, err := awaitResponse(resp, p.b.maxResult, req.ID, ev.send)
			ob.upstream(res, resp.StatusCode, since)
			if err != nil {
				return nil, outcomeOf(ctx, err, p.b.maxResult, nil)
			}
			if res.Error != nil {
				if refusedStatus(resp.StatusCode) && baseType(resp.Header.Get("Content-Type")) == "application/json" && beforeDispatch(res.Error) {
					// The server refused the request itself, in one JSON
					// answer (a protocol revision it lacks, say): no tool
					// saw the call. An event stream may have carried its
					// progress first, and other codes (invalid params,
					// say) may come from a tool that did its work.
					return nil, notRun{res.Error}
				}
				return nil, res.Error
			}
			return res.Result, nil
		})
		// Reported before the client has its answer.
		if e := p.callError(ctx, err); e != nil {
			ob.finish(e)
		} else {
			ob.finish(nil)
		}
		answered <- answer{result, err, ctx, denied}
	}()
	var a answer
	select {
	case a = <-answered:
	case <-r.Context().Done():
		ev.close() // the client went away; the call goes on
		return
	}
	defer ev.close()
	if a.denied != nil && !ev.started {
		writeDenial(w, rawID(req.ID), a.denied)
		return
	}
	e := p.callError(a.ctx, a.err)
	out, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Result: a.result, Error: e})
	status := http.StatusOK
	if e != nil {
		status = statusOf(e)
	}
	ev.answer(out, status)
}

// paramHeaders returns the Mcp-Param-* headers of h, which the upstream
// checks against the params, one "name: value" line each in order: a call
// re-issued with other such headers is another request.
func paramHeaders(h http.Header) []byte {
	var lines []string
	for k, vs := range h {
		if k = http.CanonicalHeaderKey(k); strings.HasPrefix(k, "Mcp-Param-") {
			for _, v := range vs {
				lines = append(lines, k+": "+v+"\n")
			}
		}
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, ""))
}

// outcomeOf is the error of a call whose POST upstream failed with err: a
// failed dial before any request was written (sent) never reached the
// server, so the call did not run; one that
// may have reached it (anything but that, the call's own context ending,
// a result over the bound, or the server's own refusal) leaves its
// outcome unknown.
func outcomeOf(ctx context.Context, err error, maxResult int64, sent *sentTrace) error {
	switch {
	case neverSent(err, sent):
		return notRun{err}
	case ctx.Err() != nil, tooLarge(err, maxResult), errors.Is(err, mcpguard.ErrNotRun):
		return err
	}
	return fmt.Errorf("%w (%v)", mcpguard.ErrOutcomeUnknown, err)
}

// refusedStatus reports whether an upstream's HTTP status refuses the
// request itself: a 4xx, which says the request was not acted on. A 5xx
// may come after a tool ran.
func refusedStatus(status int) bool { return status >= 400 && status < 500 }

// beforeDispatch reports whether e is an error a server raises before it
// hands a request to any handler: the request was malformed, the method
// unknown, or its revision, headers or client capabilities refused
// (2026-07-28). An MCP server answers them with a 4xx status; a tool's own
// errors (-32602 among them) may come after it did its work.
func beforeDispatch(err error) bool {
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound,
		mcp.CodeHeaderMismatch, mcp.CodeMissingRequiredClientCapabilities, mcp.CodeUnsupportedProtocolVersion:
		return true
	}
	return false
}

// neverSent reports whether err, the error of an HTTP exchange whose
// context carried sent's trace (withSentTrace), failed a dial before any
// request of the exchange was written: no byte of the call left the
// proxy. A redirect or a retry after a request was written, which may
// have reached the server, then fails its own dial: that is not it.
func neverSent(err error, sent *sentTrace) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && sent != nil && !sent.wrote.Load()
}

// sentTrace notes whether any request of an HTTP exchange (its redirects
// and retries included) wrote its headers to a connection.
type sentTrace struct{ wrote atomic.Bool }

// withSentTrace returns ctx with a trace noting into the returned
// sentTrace whether a request carrying it wrote its headers.
func withSentTrace(ctx context.Context) (context.Context, *sentTrace) {
	st := new(sentTrace)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { st.wrote.Store(true) }}), st
}

// notRun is the error of a call the upstream certainly did not run (see
// mcpguard.ErrNotRun): its message is err's.
type notRun struct{ err error }

func (e notRun) Error() string   { return e.err.Error() }
func (e notRun) Unwrap() []error { return []error{e.err, mcpguard.ErrNotRun} }

// events turns an answer into an event stream when the first message
// before the response arrives. It is safe for concurrent use; after close
// it writes nothing.
type events struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	started bool
	closed  bool
}

// send writes data as an event, starting the event stream.
func (e *events) send(data []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	if !e.started {
		e.started = true
		e.w.Header().Set("Content-Type", "text/event-stream")
		e.w.Header().Set("Cache-Control", "no-cache, no-transform")
		e.w.WriteHeader(http.StatusOK)
	}
	fmt.Fprintf(e.w, "event: message\ndata: %s\n\n", data)
	http.NewResponseController(e.w).Flush()
}

// answer writes the response data: the last event of a started stream,
// else one JSON body with status.
func (e *events) answer(data []byte, status int) {
	e.mu.Lock()
	started, closed := e.started, e.closed
	e.mu.Unlock()
	switch {
	case closed:
	case started:
		e.send(data)
	default:
		e.w.Header().Set("Content-Type", "application/json")
		e.w.WriteHeader(status)
		e.w.Write(data)
	}
}

// close ends the writing: the handler returns.
func (e *events) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
}

// awaitResponse reads the upstream's answer to the request id, JSON or an
// event stream (see sseReader; max is the proxy's MaxResultBytes), handing
// every other message of the stream to relay, and returns the response.
// An HTTP error that is not JSON-RPC is an error, and so is a stream that
// breaks sseReader's rules.
func awaitResponse(resp *http.Response, max int64, id jsonrpc.ID, relay func([]byte)) (*jsonrpc.Response, error) {
	if baseType(resp.Header.Get("Content-Type")) != "text/event-stream" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		// A 4xx without the response to the call is the server's refusal
		// of the request itself (a session it wants, a header it lacks):
		// no tool saw the call.
		refused := refusedStatus(resp.StatusCode)
		if m, err := jsonrpc.DecodeMessage(b); err == nil {
			if res, ok := m.(*jsonrpc.Response); ok && (!refused || res.ID == id) {
				return res, nil
			}
		}
		err = fmt.Errorf("the upstream answered HTTP %d without a JSON-RPC response to the call: %.200s", resp.StatusCode, bytes.TrimSpace(b))
		if refused {
			return nil, notRun{err}
		}
		return nil, err
	}
	var sr sseReader
	sr.reset(resp.Body, eventBound(max))
	for {
		ev, err := sr.next()
		if err == io.EOF {
			return nil, errors.New("the upstream's event stream ended before the result")
		}
		if err != nil {
			return nil, err
		}
		if !ev.message() {
			continue
		}
		if m, err := jsonrpc.DecodeMessage(ev.data); err == nil {
			if res, ok := m.(*jsonrpc.Response); ok && res.ID == id {
				return res, nil
			}
			relay(ev.data)
		}
	}
}

// statelessList lists the upstream's tools on the guard's behalf, every
// page, with the revision and client capabilities of the call that needs
// them (params._meta).
func (p *Proxy) statelessList(ctx context.Context, h http.Header, callParams json.RawMessage, sc *scope) {
	var cp struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(callParams, &cp)
	meta := map[string]json.RawMessage{}
	for _, k := range []string{metaVersion, "io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/clientInfo"} {
		if v, ok := cp.Meta[k]; ok {
			meta[k] = v
		}
	}
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		hdrVersion: {h.Get(hdrVersion)}, hdrMethod: {"tools/list"}}
	if a := h.Get("Authorization"); a != "" {
		hdr.Set("Authorization", a) // read by post only when it is forwarded
	}
	cursor := ""
	for n := range 100 {
		params := map[string]any{"_meta": meta}
		if cursor != "" {
			params["cursor"] = cursor
		}
		id, _ := jsonrpc.MakeID(float64(n + 1))
		body, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: "tools/list", Params: mustJSON(params)})
		if err != nil {
			return
		}
		resp, err := p.post(ctx, hdr, body)
		if err != nil {
			return
		}
		res, err := awaitResponse(resp, p.b.maxResult, id, func([]byte) {})
		resp.Body.Close()
		if err != nil || res.Error != nil {
			return
		}
		sc.guard.SawToolsList(cursor, res.Result)
		p.sawList(cursor, res.Result)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		json.Unmarshal(res.Result, &next)
		if cursor = next.NextCursor; cursor == "" {
			return
		}
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// callError is the JSON-RPC error a stateless call that ended with err
// (in ctx) is answered with; nil for nil.
func (p *Proxy) callError(ctx context.Context, err error) *jsonrpc.Error {
	var e *jsonrpc.Error
	switch {
	case err == nil:
	case errors.Is(context.Cause(ctx), errCallTimeout):
		e = p.b.timeoutError("tools/call")
	case tooLarge(err, p.b.maxResult):
		e = p.b.tooLargeError()
	case !errors.As(err, &e):
		e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream: " + err.Error()}
	}
	return e
}

// statelessStart is what is known of a stateless tools/call when it
// arrives, in scope sc (nil before it is known).
func (p *Proxy) statelessStart(r *http.Request, req *jsonrpc.Request, sc *scope) CallStart {
	tool, trace := toolAndTrace(req.Params, r.Header)
	c := CallStart{RequestID: requestIDOf(r.Header), Principal: identity.Principal(r.Context()), Tool: tool, Stateless: true, Trace: trace}
	if sc != nil {
		c.Run = runName(sc.key)
	}
	return c
}
