package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The direct path of a session's tools/call.
//
// Through the MCP Go SDK's transports a call crosses four goroutines each
// way (the downstream transport's POST handler, fromClient, the call's
// own, the upstream transport's stream reader, its pump, fromServer) and
// is decoded and encoded at every boundary. A POST that carries one
// tools/call request and nothing else, in a session whose upstream speaks
// Streamable HTTP, is served instead on the POST's own goroutine: the body
// is read once, by readWire (which reads it as the SDK's decoder does, see
// fastRequest), the guard decides as for any other call (toolCall), the
// request goes upstream in a POST of its own
// whose answer (JSON or an event stream) is read on the same goroutine,
// and the response is written to the client's POST as the downstream
// transport would write it: the same headers, one "message" event.
//
// Everything else a session receives (other methods, notifications,
// responses to the server's requests, batches, a request the downstream
// transport would refuse or treat otherwise) goes through the
// transports as before, and so does a tools/call to a command upstream.

// fastCall serves the session's POST r, whose body is body, when it
// carries one tools/call that the direct path takes, and reports whether
// it did; when it did not, nothing was written.
func (s *session) fastCall(w http.ResponseWriter, r *http.Request, body []byte) bool {
	// The downstream transport refuses a POST with Last-Event-ID, and reads
	// the standard headers of revisions from 2026-07-28 on.
	if len(r.Header.Values("Last-Event-ID")) > 0 || r.Header.Get(hdrVersion) >= statelessRevision || !s.direct() {
		return false
	}
	req := fastRequest(body)
	if req == nil {
		return false
	}
	// No POST tag (postHeader): a dropped POST cancels its call by the
	// AfterFunc below, not by dropPost, which looks for tagged calls.
	req.Extra = &mcp.RequestExtra{Header: r.Header}
	a := s.postAnswerTo(w, req.ID)
	if a == nil {
		return true
	}
	defer a.unanswered(r, req.ID)
	if refusal := s.admit(); refusal != nil {
		_, ob := s.p.observe(s.ctx, s.callStart(req, ""))
		ob.refused(refusal)
		a.answer(req.ID, nil, refusal)
		return true
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	s.mu.Lock()
	s.toolCs[req.ID] = toolCall{cancel: cancel}
	s.mu.Unlock()
	// A client that drops the POST cancels the call, as dropPost does for
	// one of the transport's.
	stop := context.AfterFunc(r.Context(), func() { s.clientGone(req.ID) })
	defer stop()
	s.toolCall(ctx, req, a.answer)
	return true
}

// postAnswerTo starts the answer to the request id, served on its POST w
// rather than by the downstream transport: nil, with the transport's 400
// written, when a request of the session with the same id is in flight;
// else with the transport's headers of a POST it answers with an event
// stream, set before the request is handled (a session that ends
// meanwhile leaves the answer at them, with no event).
func (s *session) postAnswerTo(w http.ResponseWriter, id jsonrpc.ID) *postAnswer {
	s.mu.Lock()
	_, dup := s.toolCs[id]
	if !dup {
		_, dup = s.in[id]
	}
	s.mu.Unlock()
	if dup {
		writeRPC(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("duplicate in-flight request ID %v", id.Raw())})
		return nil
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Connection", "keep-alive")
	return &postAnswer{s: s, w: w}
}

// unanswered answers the call id, when no answer was written because the
// session ended under it (its upstream lost it, or a DELETE came), as any
// request of a session that is gone is answered, so that the client
// starts another.
func (a *postAnswer) unanswered(r *http.Request, id jsonrpc.ID) {
	if a.wrote || a.s.ctx.Err() == nil || r.Context().Err() != nil {
		return
	}
	why := "it was closed"
	if err := a.s.upstreamErr(); err != nil {
		why = "its MCP server connection ended: " + err.Error()
	}
	ran := "whether the call ran is not known"
	if a.notRun {
		ran = "the call did not run"
	}
	raw, _ := json.Marshal(id.Raw())
	a.w.Header().Del("Connection")
	refuse(a.w, http.StatusNotFound, raw, codeInvalidRequest,
		"session not found: the session ended while the call was in flight ("+why+"), and "+ran+"; start a new session with initialize")
}

// fastRequest returns the tools/call request that body is when the direct
// path may serve it; else nil. Only a body readWire takes is served there
// (what it takes the SDK's decoder reads the same way): a body it leaves,
// a notification, another method, a call without params, and params that
// may carry a protocol revision in _meta (which the downstream transport
// checks against the headers) all go through the downstream transport,
// which reads them as before.
func fastRequest(body []byte) *jsonrpc.Request {
	m, ok := readWire(body)
	if !ok || !m.hasMethod || m.method != "tools/call" || len(m.params) == 0 {
		return nil
	}
	// The key io.modelcontextprotocol/protocolVersion can only be spelled
	// with its letters or with \u escapes.
	if bytes.Contains(m.params, []byte("protocolVersion")) || bytes.Contains(m.params, []byte(`\u`)) {
		return nil
	}
	return m.request()
}

// direct reports whether the session's upstream takes the direct path: an
// HTTP upstream whose session is initialized.
func (s *session) direct() bool {
	c, ok := s.up.(*httpConn)
	return ok && c.version.Load() != nil && c.SessionID() != ""
}

// postAnswer writes the answer to a call served directly to its POST.
type postAnswer struct {
	s      *session
	w      http.ResponseWriter
	wrote  bool // an answer was written
	notRun bool // the call's error said it did not run (mcpguard.ErrNotRun)
}

// answer writes the response to id as the downstream transport does: one
// event named message. Once the session has ended nothing is written, as
// by the transport, which is closed then.
func (a *postAnswer) answer(id jsonrpc.ID, result json.RawMessage, err error) {
	if a.s.ctx.Err() != nil {
		a.notRun = errors.Is(err, mcpguard.ErrNotRun) // for unanswered
		return
	}
	data, err := encodeMessage(responseOf(id, result, err))
	if err != nil {
		a.s.log.Debug("mcp proxy: response not delivered", "session", logID(a.s.down.SessionID), "err", err)
		return
	}
	// Written in three parts, without a copy of data: the response's own
	// buffer joins them.
	a.wrote = true
	_, err = a.w.Write(eventHead)
	if err == nil {
		_, err = a.w.Write(data)
	}
	if err == nil {
		_, err = a.w.Write(eventTail)
	}
	if err != nil {
		a.s.log.Debug("mcp proxy: response not delivered", "session", logID(a.s.down.SessionID), "err", err)
	}
	// Not flushed: the answer is the POST's last message, and the handler
	// returns right after it. net/http then sends it whole, a small one
	// with its length in one write instead of a chunk and then the
	// chunked end in a second.
}

// The parts of the event that carries a call's answer around its data
// (bytes, so that no writer converts them on each call).
var eventHead, eventTail = []byte("event: message\ndata: "), []byte("\n\n")

// upWrite sends the proxy's request req upstream. To an initialized HTTP
// upstream it goes in a POST of its own whose answer is read here, every
// message of it handed to fromUpstream (the response to its waiter);
// upWrite returns once the response came or the answer ended. Otherwise
// it goes through the upstream connection, whose Write returns when the
// answer starts (over HTTP) and whose reader hands the response to
// fromServer. Over HTTP, a request whose dial was refused before any
// request of its exchange was written, or that was answered 429, 401 or
// 403, did not reach the tool (notRun), on either path.
func (s *session) upWrite(ctx context.Context, req *jsonrpc.Request) error {
	c, isHTTP := s.up.(*httpConn)
	switch {
	case !isHTTP:
		return s.up.Write(ctx, req)
	case !s.direct():
		// An upstream that gives no session id (a stateless server of
		// 2025), or a request before the session is known: the SDK's
		// transport sends it, with the trace in its request's context.
		// A 429 (Too Many Requests), 401 or 403 refused it as on the
		// direct path.
		tctx, sent := withSentTrace(ctx)
		err := s.up.Write(tctx, req)
		if neverSent(err, sent) || err != nil && refusedFirst(ctx) {
			return notRun{err}
		}
		return err
	}
	err := c.call(ctx, req, s.fromUpstream)
	var f *connFailure
	if errors.As(err, &f) {
		// What breaks the SDK's connection ends the session, as when its
		// reader fails.
		if s.ctx.Err() == nil {
			s.upstreamFailed(f.err)
			s.log.Warn("mcp proxy: upstream ended; closing the session", "session", logID(s.down.SessionID), "err", f.err)
		}
		s.close()
		return f.err
	}
	return err
}

// refusedBefore reports whether an HTTP status refuses a call before any
// tool sees it, in a session: 429, 401 or 403.
func refusedBefore(status int) bool {
	return status == http.StatusTooManyRequests || deniedStatus(status)
}

// refusedFirst reports whether the HTTP exchange of the call whose context
// is ctx ended in a refusal (refusedBefore) of its first request. After a
// redirect the refusal is the next request's: the first may have run the
// call (a 303 after the work, say).
func refusedFirst(ctx context.Context) bool {
	cs, _ := ctx.Value(callKey{}).(*callState)
	return cs != nil && cs.hops.Load() == 1 && refusedBefore(int(cs.status.Load()))
}

// connFailure is an error of call after which the SDK's client transport
// would have failed its connection.
type connFailure struct{ err error }

func (f *connFailure) Error() string { return f.err.Error() }

// errRejected has the text of the SDK's jsonrpc2.ErrRejected, which its
// client transport wraps in the errors of a request that did not get
// through (the connection stands).
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// errNoResponse is the error the SDK's client transport answers a call
// with when its event stream ends before the response.
var errNoResponse = errors.New("request terminated without response")

// call sends the call req in a POST of its own, as the SDK's client
// transport would (the same body, media types, session and version
// headers, errors and statuses), and reads its answer on the caller's
// goroutine, handing each message to deliver in order. It returns once
// the response to req was delivered (the rest of an event stream is read
// on another goroutine until it ends or ctx does), or the answer ended
// without one, which is delivered as the transport would (an error
// response). A *connFailure is what would have failed the transport's
// connection.
//
// A stream that ends before the response is resumed with Last-Event-ID
// when its events had ids (see resume).
func (c *httpConn) call(ctx context.Context, req *jsonrpc.Request, deliver func(jsonrpc.Message)) error {
	summary := sendingSummary(req.Method)
	data, err := encodeMessage(req)
	if err != nil {
		return fmt.Errorf("%s: %v", summary, err)
	}
	tctx, sent := withSentTrace(ctx)
	hr, err := http.NewRequestWithContext(tctx, http.MethodPost, c.url, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w: %w", summary, errRejected, err)
	}
	hr.Header["Content-Type"] = []string{"application/json"}
	hr.Header["Accept"] = []string{"application/json, text/event-stream"}
	if v := c.version.Load(); v != nil {
		hr.Header[hdrVersion] = []string{*v}
	}
	session := c.SessionID()
	hr.Header[sessionHeader] = []string{session}
	resp, err := c.client.Do(hr)
	if err != nil {
		err = fmt.Errorf("%s: %w: %w", summary, errRejected, err)
		if neverSent(err, sent) {
			return notRun{err} // the call did not run: nothing is charged
		}
		return err
	}
	if err := checkAnswer(ctx, summary, session, resp); err != nil {
		resp.Body.Close()
		return err
	}
	if id := resp.Header.Get(sessionHeader); id != "" && id != session {
		resp.Body.Close()
		return fmt.Errorf("mismatching session IDs %q and %q", session, id)
	}
	switch baseType(resp.Header.Get("Content-Type")) {
	case "application/json":
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return &connFailure{fmt.Errorf("%s: failed to read body: %v", summary, err)}
		}
		msg, err := decodeUpstream(body)
		if err != nil {
			return &connFailure{fmt.Errorf("%s: failed to decode response: %v", summary, err)}
		}
		deliver(msg)
		return nil
	case "text/event-stream":
		return c.readCall(ctx, summary, resp.Body, req.ID, deliver)
	default:
		resp.Body.Close()
		return fmt.Errorf("%s: unsupported content type %q", summary, baseType(resp.Header.Get("Content-Type")))
	}
}

// sendingSummary is the SDK's client transport's summary of a request of
// method, which its errors start with: sending and the method quoted
// (made without formatting for a tools/call).
func sendingSummary(method string) string {
	if method == "tools/call" {
		return `sending "tools/call"`
	}
	return fmt.Sprintf("sending %q", method)
}

// checkAnswer returns the error the SDK's client transport makes of an
// answer's status: transient ones and JSON-RPC errors leave the
// connection standing; the rest fail it. A 429, 401 or 403 to the
// exchange's first request (refusedFirst: no redirect came before it), and
// a 404 for a session the upstream no longer knows, also say the call did
// not run (notRun).
func checkAnswer(ctx context.Context, summary, session string, resp *http.Response) error {
	err := answerError(summary, session, resp)
	if err == nil {
		return nil
	}
	inner := err
	f, ends := err.(*connFailure)
	if ends {
		inner = f.err
	}
	if !refusedFirst(ctx) && !errors.Is(inner, mcp.ErrSessionMissing) {
		return err
	}
	if ends {
		return &connFailure{notRun{inner}}
	}
	return notRun{err}
}

// deniedStatus reports whether an HTTP status refuses the caller: 401
// (Unauthorized) or 403 (Forbidden).
func deniedStatus(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// answerError is the error the SDK's client transport makes of an
// answer's status (see checkAnswer).
func answerError(summary, session string, resp *http.Response) error {
	switch resp.StatusCode {
	case http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout:
		return fmt.Errorf("%w: %s: %v", errRejected, summary, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	body, _ := io.ReadAll(resp.Body)
	msg, _ := jsonrpc.DecodeMessage(body)
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
		return fmt.Errorf("%s: %w: %w: %v", summary, r.Error, errRejected, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode == http.StatusNotFound && session != "" {
		// The upstream knows no such session (it restarted): it ran
		// nothing of the request.
		return &connFailure{fmt.Errorf("%s: failed to connect (session ID: %v): %w", summary, session, mcp.ErrSessionMissing)}
	}
	return &connFailure{fmt.Errorf("%s: %v", summary, http.StatusText(resp.StatusCode))}
}

// readCall reads the event stream of the call id, as the SDK's client
// transport reads it, until the response to id; the rest of the stream
// is drained on another goroutine. body is bounded per line by capBody,
// and per event by sseReader at the SDK's own bound (see HTTPDialer).
func (c *httpConn) readCall(ctx context.Context, summary string, body io.ReadCloser, id jsonrpc.ID, deliver func(jsonrpc.Message)) error {
	var sr sseReader
	sr.reset(body, eventBound(c.max))
	lastID, retry := "", time.Duration(0)
	tries := 0 // resumptions since the last event id
	for {
		ev, err := sr.next()
		if err != nil {
			var bad *sseError
			if errors.As(err, &bad) {
				body.Close()
				return &connFailure{fmt.Errorf("%s: %w", summary, err)}
			}
			// The end of the stream before the response: one whose events
			// had ids is resumed, as the SDK's transport resumes it;
			// otherwise the call gets the transport's error.
			body.Close()
			if lastID == "" || ctx.Err() != nil {
				if ctx.Err() == nil {
					deliver(&jsonrpc.Response{ID: id, Error: errNoResponse})
				}
				return nil // nil when cancelled: the waiter sees why
			}
			nb, err := c.resume(ctx, summary, lastID, retry, &tries)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return &connFailure{err}
			}
			body = nb
			sr.reset(nb, eventBound(c.max))
			continue
		}
		// The SDK's client keeps the last non-empty id, and takes a retry
		// that ParseInt reads.
		if len(ev.id) > 0 && string(ev.id) != lastID {
			lastID, tries = string(ev.id), 0
		}
		if len(ev.retry) > 0 {
			if n, err := strconv.ParseInt(string(ev.retry), 10, 64); err == nil {
				retry = time.Duration(n) * time.Millisecond
			}
		}
		if !ev.message() {
			continue
		}
		msg, err := decodeUpstream(ev.data)
		if err != nil {
			body.Close()
			return &connFailure{fmt.Errorf("%s: failed to decode event: %v", summary, err)}
		}
		deliver(msg)
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == id {
			go func() {
				io.Copy(io.Discard, body) // the connection is kept when the stream ends in time
				body.Close()
			}()
			return nil
		}
	}
}

// resume asks the upstream for the rest of a call's event stream after
// the event lastID (GET with Last-Event-ID), as the SDK's client transport
// does: after retry (the stream's own), or a delay growing from a second,
// at most 5 times without a new event.
func (c *httpConn) resume(ctx context.Context, summary, lastID string, retry time.Duration, tries *int) (io.ReadCloser, error) {
	var last error
	for *tries < 5 {
		*tries++
		delay := retry
		if delay <= 0 {
			delay = time.Second
			for range *tries - 1 {
				delay = min(delay*3/2, 30*time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", lastID)
		if id := c.SessionID(); id != "" {
			req.Header.Set(sessionHeader, id)
		}
		resp, err := c.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		if resp.StatusCode != http.StatusOK || baseType(resp.Header.Get("Content-Type")) != "text/event-stream" {
			resp.Body.Close()
			last = fmt.Errorf("HTTP %d", resp.StatusCode)
			continue
		}
		return resp.Body, nil
	}
	return nil, fmt.Errorf("%s: failed to reconnect (session ID: %v): %v", summary, c.SessionID(), last)
}
