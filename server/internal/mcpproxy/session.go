package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is one MCP session: the downstream transport and the upstream
// connection. Its tool calls are guarded in their scopes (see scope.go):
// the run each names, or the session's own.
//
// The upstream leg has its own id space: every request the proxy sends
// upstream, the client's and its own, carries an id the proxy assigns
// (1, 2, 3…), and a response is mapped back to the client's id. A
// client's id can therefore never collide with the proxy's, and a
// response to a request the proxy gave up on is dropped.
type session struct {
	ctx       context.Context
	cancel    context.CancelFunc
	down      *mcp.StreamableServerTransport
	dc        mcp.Connection // downstream: messages from and to the client
	up        mcp.Connection // upstream: messages to and from the server
	p         *Proxy         // whose scopes guard the calls; set by open
	principal string         // who opened the session; set by open
	log       *slog.Logger
	b         *bounds                                     // the proxy's limits; set by open
	onList    func(cursor string, result json.RawMessage) // Options.OnToolsList; set by open
	peer      *clientCalls                                // the calls in flight of the session's remote address; set by open
	once      sync.Once
	// initFailed: the upstream answered the client's initialize with an
	// error, or not within the call timeout; the session is closed once
	// that answer is written.
	initFailed atomic.Bool
	upTasks    atomic.Bool   // the upstream's initialize result declared the tasks capability
	ids        atomic.Int64  // the last upstream request id
	calls      atomic.Int64  // tools/call of the session being answered
	posts      atomic.Uint64 // the last POST's tag
	toolsGen   atomic.Uint64 // list_changed notifications seen
	active     atomic.Int64  // HTTP requests of the session being served
	last       atomic.Int64  // when the last one ended, in Unix nanoseconds

	mu     sync.Mutex
	out    map[jsonrpc.ID]*outgoing // upstream id → request in flight upstream
	in     map[jsonrpc.ID]*outgoing // client id → forwarded request in flight
	toolCs map[jsonrpc.ID]toolCall  // client id → tools/call being answered
	upErr  error                    // why the upstream connection failed, if it did
	used   map[scopeKey]bool        // the scopes its requests named

	version   string                            // the protocol version the session negotiated
	elicits   bool                              // the client declared the elicitation capability
	approvals map[string]chan *jsonrpc.Response // the proxy's own elicitation/create requests awaiting the client's answer, by id

	held     sync.Mutex
	heldMsgs []jsonrpc.Message // the server's messages the client could not take yet, in order
	retrying bool              // a retryHeld goroutine runs
}

// toolCall is a tools/call being answered.
type toolCall struct {
	cancel context.CancelCauseFunc
	post   string // the tag of the POST that carried it; "" on the direct path
}

// outgoing is a request in flight upstream.
type outgoing struct {
	up     jsonrpc.ID              // the proxy's id for it
	client jsonrpc.ID              // the client's id; invalid for the proxy's own
	method string                  // for a forwarded request
	cursor string                  // for a forwarded tools/list
	post   string                  // for a forwarded request: the POST that carried it
	gen    uint64                  // toolsGen when it was sent
	scope  *scope                  // for a forwarded tools/list: the scope that takes in its result
	resp   chan *jsonrpc.Response  // where its response goes
	cancel context.CancelCauseFunc // ends the upstream request (its HTTP stream)
}

func newSession(ctx context.Context, cancel context.CancelFunc, down *mcp.StreamableServerTransport, dc, up mcp.Connection, log *slog.Logger) *session {
	s := &session{ctx: ctx, cancel: cancel, down: down, dc: dc, up: up, log: log, b: defaultBounds(), peer: &clientCalls{},
		out: make(map[jsonrpc.ID]*outgoing), in: make(map[jsonrpc.ID]*outgoing), toolCs: make(map[jsonrpc.ID]toolCall),
		used: make(map[scopeKey]bool), approvals: make(map[string]chan *jsonrpc.Response)}
	s.last.Store(time.Now().UnixNano())
	return s
}

// busy counts an HTTP request of the session in (+1) or out (-1).
func (s *session) busy(d int64) {
	s.active.Add(d)
	s.last.Store(time.Now().UnixNano())
}

// idleFor returns how long the session has had no HTTP request in flight.
func (s *session) idleFor() time.Duration {
	if s.active.Load() > 0 {
		return 0
	}
	return time.Since(time.Unix(0, s.last.Load()))
}

// upstreamFailed records why the upstream connection failed, once.
func (s *session) upstreamFailed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.upErr == nil {
		s.upErr = err
	}
}

// upstreamErr returns why the upstream connection failed, or nil.
func (s *session) upstreamErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.upErr
}

func (s *session) close() {
	s.once.Do(func() {
		s.cancel()
		s.dc.Close()
		s.up.Close()
	})
}

// run pumps messages both ways until either side ends.
func (s *session) run() {
	defer s.close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.fromServer()
	}()
	s.fromClient()
	s.close()
	<-done
}

// fromClient forwards the client's messages upstream; tools/call goes
// through the guard.
func (s *session) fromClient() {
	for {
		msg, err := s.dc.Read(s.ctx)
		if err != nil {
			return
		}
		var werr error
		switch m := msg.(type) {
		case *jsonrpc.Request:
			switch {
			case m.Method == "tools/call" && m.IsCall():
				if refusal := s.admit(); refusal != nil {
					_, ob := s.p.observe(s.ctx, s.callStart(m, ""))
					ob.refused(refusal)
					s.answer(m.ID, nil, refusal)
					continue
				}
				ctx, cancel := context.WithCancelCause(s.ctx)
				s.mu.Lock()
				s.toolCs[m.ID] = toolCall{cancel: cancel, post: postOf(m)}
				s.mu.Unlock()
				go s.toolCall(ctx, m, s.answer)
				continue
			case m.Method == "notifications/cancelled":
				s.clientCancelled(m.Params)
				continue
			case m.IsCall() && m.Method == "initialize":
				s.sawInitialize(m.Params)
				werr = s.forward(m)()
			case m.IsCall():
				// Bounded, and timed, as tools/call: a request the server
				// holds must not hold the session's other messages.
				if refusal := s.admit(); refusal != nil {
					s.answer(m.ID, nil, refusal)
					continue
				}
				send := s.forward(m) // registered now: a cancellation that follows finds it
				go func() {
					defer s.release()
					if err := send(); err != nil && s.ctx.Err() == nil {
						s.upstreamFailed(err)
						s.log.Warn("mcp proxy: upstream write failed; closing the session", "session", logID(s.down.SessionID), "err", err)
						s.close()
					}
				}()
				continue
			default:
				werr = s.up.Write(s.ctx, m)
			}
		default:
			if r, ok := msg.(*jsonrpc.Response); ok && s.approvalAnswer(r) {
				continue
			}
			// A response to a request of the server: the server's id
			// space, passed through.
			werr = s.up.Write(s.ctx, msg)
		}
		if werr != nil && s.ctx.Err() == nil {
			s.upstreamFailed(werr)
			s.log.Warn("mcp proxy: upstream write failed; closing the session", "session", logID(s.down.SessionID), "err", werr)
			return
		}
	}
}

// forward registers a request of the client and returns the function
// that sends it upstream under a proxy id and, but for initialize, waits
// for its response (see await). That function returns an error that
// breaks the upstream connection.
func (s *session) forward(req *jsonrpc.Request) func() error {
	ctx, cancelCause := context.WithCancelCause(s.ctx)
	// The timeout covers the write too: over HTTP it returns only when
	// the response starts, which a server may delay until its result.
	ctx, stop := context.WithTimeoutCause(ctx, s.b.callTimeout, errCallTimeout)
	cancel := func(err error) { cancelCause(err); stop() }
	o := &outgoing{up: s.nextID(), client: req.ID, method: req.Method, cancel: cancel, post: postOf(req),
		resp: make(chan *jsonrpc.Response, 1), gen: s.toolsGen.Load()}
	if req.Method == "tools/list" {
		o.cursor = listCursor(req.Params)
		if sc, e := s.scopeOf(req); e == nil {
			o.scope = sc
		}
	}
	// A result over the bound ends the request: the client gets the
	// error, the server notifications/cancelled.
	cs := &callState{id: o.up, max: s.b.maxResult, cancel: func(error) {
		if s.forget(o) {
			cancel(errResultTooLarge)
			s.answer(req.ID, nil, s.b.tooLargeError())
			go s.cancelUpstream(o.up, "the result exceeds the proxy's --max-result-bytes")
		}
	}}
	ctx = context.WithValue(ctx, callKey{}, cs)
	s.mu.Lock()
	s.out[o.up] = o
	s.in[req.ID] = o
	s.mu.Unlock()
	return func() error { return s.send(ctx, o, req) }
}

// send writes the request o upstream and awaits its response.
func (s *session) send(ctx context.Context, o *outgoing, req *jsonrpc.Request) error {
	err := s.up.Write(ctx, &jsonrpc.Request{ID: o.up, Method: req.Method, Params: req.Params, Extra: req.Extra})
	switch {
	case err == nil && req.Method == "initialize":
		go s.await(ctx, o)
		return nil
	case err == nil || ctx.Err() != nil: // ctx: cancelled meanwhile, the client answered and the server told
		s.await(ctx, o)
		return nil
	}
	s.forget(o)
	o.cancel(nil)
	var we *jsonrpc.Error
	if req.Method != "initialize" && errors.As(err, &we) {
		// The request did not get through, but the connection stands.
		s.answer(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream: " + err.Error()})
		return nil
	}
	return err
}

// await waits for the response to the client's request o, within the
// call timeout, and hands it to the client under the client's id. A
// request the client cancelled or whose result was too large was answered
// already; one that times out is answered with the timeout's error and
// cancelled upstream.
func (s *session) await(ctx context.Context, o *outgoing) {
	select {
	case m := <-o.resp:
		// Not at once: the response's stream ends right after it (see
		// roundTrip).
		time.AfterFunc(streamEndGrace, func() { o.cancel(nil) })
		if m.Error != nil && o.method == "initialize" {
			s.initFailed.Store(true)
		}
		if m.Error == nil {
			switch o.method {
			case "initialize":
				s.initialized(m.Result)
			case "tools/list":
				if s.toolsGen.Load() == o.gen && o.scope != nil { // not a list from before a change
					o.scope.guard.SawToolsList(o.cursor, m.Result)
					s.sawList(o.cursor, m.Result)
				}
			}
		}
		result := m.Result
		if o.method == "tools/list" && m.Error == nil {
			result = s.p.filterList(s.principal, result)
		}
		if err := s.dc.Write(s.ctx, &jsonrpc.Response{ID: o.client, Result: result, Error: m.Error, Extra: m.Extra}); err != nil && s.ctx.Err() == nil {
			s.log.Debug("mcp proxy: response not delivered", "session", logID(s.down.SessionID), "err", err)
		}
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errCallTimeout) && s.forget(o) {
			o.cancel(errCallTimeout)
			if o.method == "initialize" {
				s.initFailed.Store(true)
			}
			s.answer(o.client, nil, s.b.timeoutError(o.method))
			s.cancelUpstream(o.up, "the proxy's --call-timeout expired")
		}
	}
}

// sawList hands a page of the upstream's tools to Options.OnToolsList.
func (s *session) sawList(cursor string, result json.RawMessage) {
	if s.onList != nil {
		s.onList(cursor, result)
	}
}

// nextID returns a new upstream request id.
func (s *session) nextID() jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(s.ids.Add(1)))
	return id
}

// forget removes o from the requests in flight; it reports whether o was
// still there.
func (s *session) forget(o *outgoing) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out[o.up] != o {
		return false
	}
	delete(s.out, o.up)
	if o.client.IsValid() && s.in[o.client] == o {
		delete(s.in, o.client)
	}
	return true
}

// fromServer forwards the server's messages to the client, handing the
// responses the proxy awaits to their waiters.
func (s *session) fromServer() {
	for {
		msg, err := s.up.Read(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil {
				s.upstreamFailed(err)
				s.log.Warn("mcp proxy: upstream ended; closing the session", "session", logID(s.down.SessionID), "err", err)
			}
			s.close()
			return
		}
		s.fromUpstream(msg)
	}
}

// fromUpstream hands a message of the server's to its waiter (a response
// the proxy awaits) or to the client (anything else), whichever stream it
// came on.
func (s *session) fromUpstream(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		s.mu.Lock()
		o := s.out[m.ID]
		s.mu.Unlock()
		if o != nil && s.forget(o) {
			o.resp <- m // buffered: never blocks
		}
		return // else a request the proxy gave up on
	case *jsonrpc.Request:
		if m.Method == "notifications/tools/list_changed" {
			s.toolsGen.Add(1)
			s.toolsChanged()
		}
	}
	s.deliver(msg)
}

// The bounds on the server's messages held for a client that cannot take
// them yet.
const (
	maxHeld  = 256
	holdFor  = 10 * time.Second
	retryGap = 25 * time.Millisecond
)

// deliver writes a message of the server's (a request or notification)
// to the client. The downstream transport sends a message that answers no
// request of the client's on the client's standalone GET stream, and
// refuses it while that stream is not open: a client opens it after
// initialize, so a progress notification or an elicitation sent during an
// early call would be lost. Such a message is held, in order with those
// that follow, and sent as soon as the stream takes it, for up to holdFor;
// past that, or past maxHeld messages, it is dropped with a warning.
func (s *session) deliver(msg jsonrpc.Message) {
	s.held.Lock()
	defer s.held.Unlock()
	if len(s.heldMsgs) == 0 {
		err := s.dc.Write(s.ctx, msg)
		if err == nil || s.ctx.Err() != nil {
			return
		}
	}
	if len(s.heldMsgs) >= maxHeld {
		s.log.Warn("mcp proxy: a message of the server's dropped: the client has not opened its stream and too many are held",
			"session", logID(s.down.SessionID), "held", len(s.heldMsgs))
		return
	}
	s.heldMsgs = append(s.heldMsgs, msg)
	if !s.retrying {
		s.retrying = true
		go s.retryHeld()
	}
}

// retryHeld sends the held messages once the client's stream takes them,
// or drops them after holdFor.
func (s *session) retryHeld() {
	deadline := time.Now().Add(holdFor)
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(retryGap):
		}
		s.held.Lock()
		for len(s.heldMsgs) > 0 && s.dc.Write(s.ctx, s.heldMsgs[0]) == nil {
			s.heldMsgs[0] = nil
			s.heldMsgs = s.heldMsgs[1:]
		}
		done := len(s.heldMsgs) == 0
		if !done && time.Now().After(deadline) {
			s.log.Warn("mcp proxy: messages of the server's dropped: the client did not open its stream in time",
				"session", logID(s.down.SessionID), "dropped", len(s.heldMsgs), "waited", holdFor.String())
			s.heldMsgs, done = nil, true
		}
		if done {
			s.retrying = false
		}
		s.held.Unlock()
		if done {
			return
		}
	}
}

// initialized tells an upstream connection that wants to know the
// protocol version the server chose, and notes whether the server serves
// tasks (see passThrough).
func (s *session) initialized(result json.RawMessage) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tasks map[string]json.RawMessage `json:"tasks"`
		} `json:"capabilities"`
	}
	json.Unmarshal(result, &r)
	s.upTasks.Store(r.Capabilities.Tasks != nil)
	s.mu.Lock()
	s.version = r.ProtocolVersion
	s.mu.Unlock()
	if u, ok := s.up.(interface{ initialized(string) }); ok && r.ProtocolVersion != "" {
		u.initialized(r.ProtocolVersion)
	}
}

// errClientCancelled is why a request the client cancelled, or whose HTTP
// request it dropped, ended. It wraps context.Canceled, so the guard knows
// the call was abandoned after it may have run.
var errClientCancelled = fmt.Errorf("cancelled by the client: %w", context.Canceled)

// clientCancelled handles the client's notifications/cancelled: the
// request it names is given up, and the server told under the proxy's id.
// A notification naming no request in flight is dropped.
func (s *session) clientCancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	s.clientGone(id)
}

// clientGone gives up the client's request id: a tools/call is cancelled
// (its upstream request with it); a forwarded request is cancelled
// upstream.
func (s *session) clientGone(id jsonrpc.ID) {
	s.mu.Lock()
	tc := s.toolCs[id]
	o := s.in[id]
	s.mu.Unlock()
	if tc.cancel != nil {
		tc.cancel(errClientCancelled)
	}
	if o != nil && s.forget(o) {
		o.cancel(errClientCancelled)
		s.answer(id, nil, errCancelledAnswer)
		s.cancelUpstream(o.up, errClientCancelled.Error())
	}
}

// errCancelledAnswer answers a request the client cancelled or dropped,
// as the go-sdk's servers do: the downstream transport frees a request's
// state (and ends its POST's stream, and lets the id be used again) only
// when the request is answered. A client that cancelled ignores it.
var errCancelledAnswer = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "preflight proxy: request cancelled by the client"}

// cancelUpstream sends notifications/cancelled for the proxy's request id.
//
// Over HTTP the notification travels in a POST of its own and may reach
// the server before the request it cancels, which the server then ignores
// and runs to its end; so it is sent once more, recancelAfter later. The
// proxy never reuses an upstream id, and a server ignores the
// cancellation of a request it has finished.
func (s *session) cancelUpstream(id jsonrpc.ID, reason string) {
	params, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": reason})
	send := func() {
		ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
		defer cancel()
		if err := s.up.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params}); err != nil && s.ctx.Err() == nil {
			s.log.Debug("mcp proxy: notifications/cancelled not delivered upstream", "session", logID(s.down.SessionID), "err", err)
		}
	}
	send()
	time.AfterFunc(recancelAfter, func() {
		if s.ctx.Err() == nil {
			send()
		}
	})
}

// streamEndGrace is how long the stream of an upstream request whose
// response came may take to end before the proxy ends it (see roundTrip).
const streamEndGrace = time.Second

// recancelAfter is when a cancellation is sent upstream again.
const recancelAfter = time.Second

// answer writes a response to the client's request id.
func (s *session) answer(id jsonrpc.ID, result json.RawMessage, err error) {
	if err := s.dc.Write(s.ctx, responseOf(id, result, err)); err != nil {
		s.log.Debug("mcp proxy: response not delivered", "session", logID(s.down.SessionID), "err", err)
	}
}

// responseOf is the response to the client's request id: result, or err
// as a JSON-RPC error (one that is not becomes an internal error saying
// "upstream: " and err).
func responseOf(id jsonrpc.ID, result json.RawMessage, err error) *jsonrpc.Response {
	if err == nil {
		return &jsonrpc.Response{ID: id, Result: result}
	}
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream: " + err.Error()}
	}
	return &jsonrpc.Response{ID: id, Error: we}
}

// toolCall answers one tools/call through the guard, within the call
// timeout, with answer: s.answer for a call that came through the
// downstream transport, a write to its own POST for one served directly
// (see fastCall). ctx is cancelled when the client cancels the call.
func (s *session) toolCall(ctx context.Context, req *jsonrpc.Request, answer func(jsonrpc.ID, json.RawMessage, error)) {
	defer s.release()
	defer func() {
		s.mu.Lock()
		tc := s.toolCs[req.ID]
		delete(s.toolCs, req.ID)
		s.mu.Unlock()
		if tc.cancel != nil {
			tc.cancel(nil)
		}
	}()
	// The params' name and _meta, read once for the scope, the
	// observation and the policy.
	head := readHead(req.Params)
	sc, refusal := s.scopeOfHead(req, head)
	if refusal != nil {
		_, ob := s.p.observe(ctx, s.callStartOf(req, head, ""))
		ob.refused(refusal)
		answer(req.ID, nil, refusal)
		return
	}
	sc.busy(1)
	defer sc.busy(-1)
	ctx, ob := s.p.observe(ctx, s.callStartOf(req, head, runName(sc.key)))
	if refusal := s.p.toolRefusal(sc, head.Name); refusal != nil {
		ob.refused(refusal)
		answer(req.ID, nil, refusal)
		return
	}
	tctx, stop := context.WithTimeoutCause(ctx, s.b.callTimeout, errCallTimeout)
	defer stop()
	if needsList(sc, head.Name, req.Params) {
		s.listTools(tctx, sc)
	}
	gctx := tctx
	if s.legacy() {
		// A client of an earlier generation never retries an
		// input_required result: the guard asks it for approvals itself.
		gctx = mcpguard.WithElicit(tctx, s.elicit)
	}
	result, err := sc.guard.CallTool(gctx, req.Params, func(ctx context.Context) (json.RawMessage, error) {
		since := time.Now()
		resp, err := s.roundTrip(ctx, "tools/call", s.p.withMeta(ctx, req.Params), req.Extra)
		ob.upstream(resp, 0, since)
		if err != nil && s.ctx.Err() != nil && !errors.Is(err, mcpguard.ErrNotRun) {
			// The session ended under the call (its upstream connection
			// failed or closed): the server may have run it.
			why := s.upstreamErr()
			if why == nil {
				why = errors.New("the session closed")
			}
			return nil, fmt.Errorf("%w (%v)", mcpguard.ErrOutcomeUnknown, why)
		}
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	})
	if errors.Is(err, mcpguard.ErrNotRun) && s.ctx.Err() != nil {
		// The session ended because the upstream refused the call (it
		// lost the session): nothing ran, nothing was charged.
		ob.finish(err)
		answer(req.ID, nil, err) // written by no one: the session is gone
		return
	}
	if ctx.Err() != nil {
		ob.finish(errCancelledAnswer)
		if s.ctx.Err() == nil {
			answer(req.ID, nil, errCancelledAnswer)
		}
		return
	}
	if err != nil && errors.Is(context.Cause(tctx), errCallTimeout) {
		err = s.b.timeoutError("tools/call")
	}
	ob.finish(err)
	answer(req.ID, result, err)
}

// roundTrip sends a request of the proxy's own upstream and waits for its
// response. When ctx ends first (the client cancelled, the call timed
// out), the server is told with notifications/cancelled, the upstream
// request is ended, and a late response is dropped.
func (s *session) roundTrip(ctx context.Context, method string, params json.RawMessage, extra any) (*jsonrpc.Response, error) {
	// The upstream request ends with ctx, but not as soon as its response
	// came: its stream is ended by the server right after, and a request
	// ended before that end is read takes its connection with it (the
	// next request would dial a new one). It is left streamEndGrace to
	// end.
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	o := &outgoing{up: s.nextID(), method: method, resp: make(chan *jsonrpc.Response, 1), cancel: cancel}
	cs := &callState{id: o.up, cancel: cancel, max: s.b.maxResult}
	wctx = context.WithValue(wctx, callKey{}, cs)
	s.mu.Lock()
	s.out[o.up] = o
	s.mu.Unlock()
	// Over HTTP, upWrite returns when the response starts (or, on the
	// direct path, when it came), which a server may delay until its
	// result: ending wctx ends it too. A refusal that ended the session
	// (which ends wctx) is still the call's answer: it did not run.
	if err := s.upWrite(wctx, &jsonrpc.Request{ID: o.up, Method: method, Params: params, Extra: extra}); err != nil &&
		(wctx.Err() == nil || errors.Is(err, mcpguard.ErrNotRun)) {
		stop()
		cancel(nil)
		s.forget(o)
		return nil, err
	}
	select {
	case r := <-o.resp:
		if stop() {
			time.AfterFunc(streamEndGrace, func() { cancel(nil) })
		}
		return r, nil
	case <-wctx.Done():
		stop()
	}
	// The server may have the request: tell it.
	if s.forget(o) {
		reason := "cancelled by the proxy"
		switch {
		case cs.tooLarge.Load():
			reason = "the result exceeds the proxy's --max-result-bytes"
		case errors.Is(context.Cause(ctx), errCallTimeout):
			reason = "the proxy's --call-timeout expired"
		case errors.Is(context.Cause(ctx), errClientCancelled):
			reason = errClientCancelled.Error()
		}
		s.cancelUpstream(o.up, reason)
	}
	if cs.tooLarge.Load() {
		return nil, s.b.tooLargeError()
	}
	return nil, context.Cause(wctx)
}

// listTools asks the server for its tools on the proxy's own behalf,
// every page, for a client that calls before it lists or after the list
// changed.
func (s *session) listTools(ctx context.Context, sc *scope) {
	cursor, gen := "", s.toolsGen.Load()
	for range 100 {
		params, _ := json.Marshal(map[string]any{"cursor": cursor})
		if cursor == "" {
			params = json.RawMessage(`{}`)
		}
		resp, err := s.roundTrip(ctx, "tools/list", params, nil)
		if err != nil || resp.Error != nil {
			return
		}
		if g := s.toolsGen.Load(); g != gen { // changed meanwhile: from the first page again
			cursor, gen = "", g
			continue
		}
		sc.guard.SawToolsList(cursor, resp.Result)
		s.sawList(cursor, resp.Result)
		var next struct {
			NextCursor string `json:"nextCursor"`
		}
		json.Unmarshal(resp.Result, &next)
		if next.NextCursor == "" {
			return
		}
		cursor = next.NextCursor
	}
}

// scopeOf returns the scope of the session's request req: the run its
// handle names (params._meta or the header of its POST), else the
// session's own; or the refusal to answer it with.
func (s *session) scopeOf(req *jsonrpc.Request) (*scope, *jsonrpc.Error) {
	return s.scopeOfHead(req, readHead(req.Params))
}

// scopeOfHead is scopeOf for a request whose params' head is head.
func (s *session) scopeOfHead(req *jsonrpc.Request, head callHead) (*scope, *jsonrpc.Error) {
	var h http.Header
	if x, ok := req.Extra.(*mcp.RequestExtra); ok && x != nil {
		h = x.Header
	}
	handle, e := head.runHandle(h)
	if e != nil {
		return nil, e
	}
	key := keyOf(s.principal, handle, s.down.SessionID)
	sc, e := s.p.scopeFor(key)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	s.used[key] = true
	s.mu.Unlock()
	return sc, nil
}

// toolsChanged marks the tool list of every scope the session used stale.
func (s *session) toolsChanged() {
	s.mu.Lock()
	keys := make([]scopeKey, 0, len(s.used))
	for k := range s.used {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		if sc := s.p.existingScope(k); sc != nil {
			sc.guard.ToolsChanged()
		}
	}
}

// callStart is what is known of the session's tools/call req when it
// arrives, in the run named run ("" before it is known).
func (s *session) callStart(req *jsonrpc.Request, run string) CallStart {
	return s.callStartOf(req, readHead(req.Params), run)
}

// callStartOf is callStart for a request whose params' head is head.
func (s *session) callStartOf(req *jsonrpc.Request, head callHead, run string) CallStart {
	var h http.Header
	if x, ok := req.Extra.(*mcp.RequestExtra); ok && x != nil {
		h = x.Header
	}
	return CallStart{RequestID: requestIDOf(h), Principal: s.principal, Run: run, Tool: head.Name, Trace: head.trace(h)}
}

// needsList reports whether the scope's guard needs the tool list before
// the call of params, whose name as encoding/json reads it is name.
// Params read two ways are refused by the guard before anything is
// forwarded; only a name the guard reads is worth listing the tools for.
// Params the guard reads have one member "name" and no other that
// differs from it only in case, which encoding/json reads the same: when
// the guard does not need the list for name, it does not for the guard's
// name either, and params are not read again.
func needsList(sc *scope, name string, params json.RawMessage) bool {
	if !sc.guard.NeedsList(name) {
		return false
	}
	strict, _, err := mcpguard.ReadCallParams(params)
	return err == nil && sc.guard.NeedsList(strict)
}
