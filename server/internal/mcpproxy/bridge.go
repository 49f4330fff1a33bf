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
	"strconv"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight/server/internal/identity"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stateless bridge serves requests of the 2026-07-28 revision in front
// of an upstream without a URL (a command speaking over stdio): such a
// request has no session, hence no pipe of its own, so the bridge keeps one
// long-lived upstream connection for the whole proxy, dialled at the first
// stateless request and again after it ends, and multiplexes every
// stateless request over it.
//
// Each request goes upstream under an id of the bridge's own, and its
// progress token (params._meta.progressToken) under a token of the
// bridge's own, so that requests of different clients never collide; the
// answer and the progress notifications come back under the client's. What
// the upstream sends outside any request is routed as follows: a
// notification naming a subscriptions/listen request (its
// _meta io.modelcontextprotocol/subscriptionId), or a list-changed or
// resource-updated one, goes to the subscriptions/listen streams that asked
// for its kind; any other (a log message, say) to the one client request in
// flight when there is exactly one and the connection has carried the
// requests of one principal only, else nowhere; a request (ping) is
// answered by the bridge (see serverRequest).
//
// The bridge probes the upstream once per connection with server/discover.
// An upstream that serves 2026-07-28 on stdio (the go-sdk does) gets every
// stateless request as it came, its per-request _meta included. One that
// does not is bridged: the bridge sends initialize once (revision
// 2025-11-25, with the capabilities of the client whose request dialled,
// but those that let a server send requests to the client: sampling,
// elicitation and roots), strips the revision's _meta keys from each
// request, answers server/discover itself from the initialize result, and
// answers subscriptions/listen with method not found.
//
// The bridge sits below the proxy's stateless path: post hands it the
// request where it would POST to an HTTP upstream, and it answers with an
// http.Response as such an upstream would (JSON, or an event stream when a
// notification comes before the answer), so that the scope's guard, the
// bounds, the call timeout and the exactly-once rules are the HTTP path's.
type bridge struct {
	mu      sync.Mutex
	up      *bridgeConn // nil until dialled, and after it ended
	dialing chan struct{}
	closed  bool // by the proxy's Close: no more dialling
	// schemas are the input schemas of the upstream's tools, for the
	// Mcp-Param-* headers (bridgeheaders.go); nil until listed, and again
	// after a list-changed notification.
	schemas map[string]json.RawMessage
}

// bridgeConn is one upstream connection of the bridge.
type bridgeConn struct {
	br     *bridge
	conn   mcp.Connection
	legacy bool            // the upstream speaks only initialize
	init   json.RawMessage // its initialize result, when legacy
	done   chan struct{}   // closed when the connection has ended
	err    error           // why, set before done is closed

	mu      sync.Mutex
	next    int64
	pending map[int64]*bridged // by upstream id
	// principals are those whose requests the connection carried: a
	// notification that names no request goes to a request only while
	// there has been one principal (see notification).
	principals map[string]bool
	tokens     map[string]*bridged // by upstream progress token
}

// bridged is one request in flight through the bridge.
type bridged struct {
	id     jsonrpc.ID      // the client's
	upID   int64           // the bridge's
	method string          // the request's
	token  json.RawMessage // the client's progress token, nil for none
	// For subscriptions/listen: the notifications asked for (by method;
	// resource URIs for notifications/resources/updated), and whether the
	// stream's acknowledgement came.
	wants map[string]bool
	uris  map[string]bool
	acked bool
	own   bool // the bridge's own request (probe, initialize, tools/list)

	mu     sync.Mutex
	queue  [][]byte // messages for the client, in order
	signal chan struct{}
	ended  bool // the response is in the queue
	err    error
}

// push queues msg (already in the client's ids) for the request.
func (b *bridged) push(msg []byte, final bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.queue = append(b.queue, msg)
	b.ended = final
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// fail ends the request without an answer.
func (b *bridged) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.ended, b.err = true, err
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// next returns the next message queued, waiting for it until ctx ends;
// final says it is the answer. After the answer, or a failure, it returns
// io.EOF or the failure.
func (b *bridged) nextMsg(ctx context.Context) (msg []byte, final bool, err error) {
	for {
		b.mu.Lock()
		if len(b.queue) > 0 {
			msg = b.queue[0]
			b.queue = b.queue[1:]
			final = b.ended && len(b.queue) == 0 && b.err == nil
			b.mu.Unlock()
			return msg, final, nil
		}
		if b.ended {
			err := b.err
			b.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return nil, false, err
		}
		b.mu.Unlock()
		select {
		case <-b.signal:
		case <-ctx.Done():
			return nil, false, context.Cause(ctx)
		}
	}
}

// bridgePost is post for an upstream without a URL.
func (p *Proxy) bridgePost(ctx context.Context, h http.Header, body []byte) (*http.Response, error) {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return nil, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		// A response of the client has no request to answer: the bridge
		// sends the upstream none (see serverRequest).
		return emptyResponse(http.StatusAccepted), nil
	}
	if !req.IsCall() && !strings.HasPrefix(req.Method, "notifications/") {
		// A request without an id: nothing could carry its answer.
		b := []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":` +
			strconv.Quote("invalid request: "+strconv.Quote(req.Method)+" without an id") + `}}`)
		return &http.Response{StatusCode: http.StatusBadRequest, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b))}, nil
	}
	if e := checkVersionHeader(h, req); e != nil {
		return jsonResponse(&jsonrpc.Response{ID: req.ID, Error: e}), nil
	}
	c, err := p.br.conn(ctx, p, req.Params)
	if err != nil {
		return nil, err
	}
	if e := p.br.paramHeaders(ctx, c, h, req); e != nil {
		return jsonResponse(&jsonrpc.Response{ID: req.ID, Error: e}), nil
	}
	if !req.IsCall() {
		// A client's cancellation names its own id, which the upstream
		// never saw (a request ends with its stream through the bridge).
		if req.Method != "notifications/cancelled" {
			c.write(ctx, &jsonrpc.Request{Method: req.Method, Params: c.params(req.Params, "")})
		}
		return emptyResponse(http.StatusAccepted), nil
	}
	if c.legacy {
		switch req.Method {
		case "server/discover":
			return jsonResponse(&jsonrpc.Response{ID: req.ID, Result: discoverOf(c.init)}), nil
		case "subscriptions/listen":
			return jsonResponse(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: "subscriptions/listen is not served: the upstream (stdio) speaks only the initialize handshake, whose notifications the proxy's bridge does not carry to stateless clients"}}), nil
		}
	}
	b := c.start(ctx, req)
	out := &jsonrpc.Request{ID: mustID(b.upID), Method: req.Method, Params: c.params(req.Params, c.tokenOf(b, req.Params))}
	if err := c.write(ctx, out); err != nil {
		// Not sent: the connection ended (its process exited) after conn
		// returned it. The next request dials again; this one fails as an
		// upstream that cannot be reached, never run.
		c.finish(b)
		return nil, &net.OpError{Op: "dial", Net: "stdio", Err: err}
	}
	// The request ends with ctx (the call timeout, or the client going
	// away): the upstream is told so.
	stop := context.AfterFunc(ctx, func() {
		if c.finish(b) {
			c.write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled",
				Params: mustJSON(map[string]any{"requestId": b.upID, "reason": context.Cause(ctx).Error()})})
		}
		b.fail(context.Cause(ctx))
	})
	first, final, err := b.nextMsg(ctx)
	if err != nil {
		stop()
		c.finish(b)
		return nil, err
	}
	if final {
		// An error of its own HTTP status is one JSON body, as a
		// Streamable HTTP server of the revision sends it.
		if m, err := jsonrpc.DecodeMessage(first); err == nil {
			var e *jsonrpc.Error
			if res, ok := m.(*jsonrpc.Response); ok && errors.As(res.Error, &e) && statusOf(e) != http.StatusOK {
				stop()
				return &http.Response{StatusCode: statusOf(e), Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(bytes.NewReader(first)), ContentLength: int64(len(first))}, nil
			}
		}
	}
	// Anything else is an event stream (as the go-sdk's server answers
	// by default), the notifications of the request before its answer.
	pr, pw := io.Pipe()
	go func() {
		defer stop()
		msg := first
		for {
			if _, err := fmt.Fprintf(pw, "event: message\ndata: %s\n\n", msg); err != nil {
				c.finish(b)
				return
			}
			if final {
				pw.Close()
				return
			}
			if msg, final, err = b.nextMsg(ctx); err != nil {
				c.finish(b)
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr}, nil
}

func emptyResponse(status int) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody}
}

func jsonResponse(res *jsonrpc.Response) *http.Response {
	b, _ := jsonrpc.EncodeMessage(res)
	status := http.StatusOK
	var e *jsonrpc.Error
	if errors.As(res.Error, &e) {
		status = statusOf(e)
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b))}
}

func mustID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}

// conn returns the bridge's upstream connection, dialling (and probing)
// it when there is none; params are those of the request that needs it.
func (br *bridge) conn(ctx context.Context, p *Proxy, params json.RawMessage) (*bridgeConn, error) {
	for {
		br.mu.Lock()
		if br.closed {
			br.mu.Unlock()
			return nil, &net.OpError{Op: "dial", Net: "stdio", Err: errors.New("the proxy is closing")}
		}
		if c := br.up; c != nil {
			select {
			case <-c.done:
				br.up = nil
			default:
				br.mu.Unlock()
				return c, nil
			}
		}
		if wait := br.dialing; wait != nil {
			br.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		wait := make(chan struct{})
		br.dialing = wait
		br.mu.Unlock()
		c, err := p.bridgeDial(ctx, params)
		br.mu.Lock()
		br.up, br.dialing = c, nil
		if br.closed && c != nil { // closed while dialling
			br.up = nil
			br.mu.Unlock()
			close(wait)
			c.conn.Close()
			<-c.done
			return nil, &net.OpError{Op: "dial", Net: "stdio", Err: errors.New("the proxy is closing")}
		}
		br.mu.Unlock()
		close(wait)
		return c, err
	}
}

// close ends the bridge's connection, and returns once it has ended (a
// command's process has exited); the requests in flight are cancelled
// upstream first.
func (br *bridge) close() {
	br.mu.Lock()
	c := br.up
	br.up, br.closed = nil, true
	br.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	var ids []int64
	for id := range c.pending {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled",
			Params: mustJSON(map[string]any{"requestId": id, "reason": "the proxy is closing"})})
	}
	c.conn.Close()
	<-c.done
}

// bridgeDial opens the bridge's connection and learns which generation
// the upstream speaks. A failure is a dial error: nothing was sent.
func (p *Proxy) bridgeDial(ctx context.Context, params json.RawMessage) (*bridgeConn, error) {
	dialErr := func(err error) error { return &net.OpError{Op: "dial", Net: "stdio", Err: err} }
	// The bridge's process counts against MaxProcesses as a session's
	// does, until its connection has ended (read gives the slot back).
	if !p.takeProc() {
		return nil, dialErr(p.procLimitError())
	}
	conn, err := p.opts.Dial(context.WithValue(p.ctx, maxResultKey{}, p.b.maxResult))
	if err != nil {
		p.giveProc()
		return nil, dialErr(err)
	}
	c := &bridgeConn{br: &p.br, conn: conn, done: make(chan struct{}), pending: map[int64]*bridged{}, tokens: map[string]*bridged{},
		principals: map[string]bool{}}
	go c.read(p)
	var meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(params, &meta)
	caps := meta.Meta["io.modelcontextprotocol/clientCapabilities"]
	info := meta.Meta["io.modelcontextprotocol/clientInfo"]
	if len(caps) == 0 {
		caps = json.RawMessage("{}")
	}
	if len(info) == 0 {
		info = json.RawMessage(`{"name":"preflight-proxy","version":"1"}`)
	}
	res, err := c.roundTrip(ctx, "server/discover", mustJSON(map[string]any{"_meta": map[string]json.RawMessage{
		metaVersion: json.RawMessage(`"` + statelessRevision + `"`), "io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo": info}}))
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err == nil && res.Error == nil && json.Unmarshal(res.Result, &d) == nil && containsStateless(d.SupportedVersions) {
		return c, nil
	}
	select {
	case <-c.done:
		conn.Close()
		return nil, dialErr(c.err)
	default:
	}
	// The upstream speaks only the initialize handshake.
	res, err = c.roundTrip(ctx, "initialize", mustJSON(map[string]any{"protocolVersion": legacyRevisions[0],
		"capabilities": clientOnly(caps), "clientInfo": info}))
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		conn.Close()
		return nil, dialErr(fmt.Errorf("initialize: %w", err))
	}
	c.legacy, c.init = true, res.Result
	c.write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage("{}")})
	return c, nil
}

func containsStateless(versions []string) bool {
	for _, v := range versions {
		if v == statelessRevision {
			return true
		}
	}
	return false
}

// clientOnly returns the client capabilities caps but those that let a
// server send the client requests, which a stateless client cannot get
// through the bridge.
func clientOnly(caps json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil {
		return json.RawMessage("{}")
	}
	for _, k := range []string{"sampling", "elicitation", "roots"} {
		delete(m, k)
	}
	return mustJSON(m)
}

// discoverOf is the server/discover result of a legacy upstream: its
// initialize result, the revision the bridge serves for it.
func discoverOf(init json.RawMessage) json.RawMessage {
	var r struct {
		Capabilities json.RawMessage `json:"capabilities"`
		ServerInfo   json.RawMessage `json:"serverInfo"`
		Instructions string          `json:"instructions,omitempty"`
	}
	json.Unmarshal(init, &r)
	out := map[string]any{"supportedVersions": []string{statelessRevision}, "capabilities": r.Capabilities,
		"resultType": "complete"}
	if r.Instructions != "" {
		out["instructions"] = r.Instructions
	}
	if len(r.ServerInfo) > 0 {
		out["_meta"] = map[string]json.RawMessage{"io.modelcontextprotocol/serverInfo": r.ServerInfo}
	}
	return mustJSON(out)
}

// roundTrip sends the bridge's own request and waits for its answer.
func (c *bridgeConn) roundTrip(ctx context.Context, method string, params json.RawMessage) (*jsonrpc.Response, error) {
	b := c.start(ctx, &jsonrpc.Request{Method: method})
	defer c.finish(b)
	if err := c.write(ctx, &jsonrpc.Request{ID: mustID(b.upID), Method: method, Params: params}); err != nil {
		return nil, err
	}
	msg, final, err := b.nextMsg(ctx)
	for err == nil && !final {
		msg, final, err = b.nextMsg(ctx)
	}
	if err != nil {
		return nil, err
	}
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return nil, err
	}
	return m.(*jsonrpc.Response), nil
}

// start registers req, a client's request (its principal in ctx) or the
// bridge's own (without an id), under an upstream id of the bridge's.
func (c *bridgeConn) start(ctx context.Context, req *jsonrpc.Request) *bridged {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	b := &bridged{id: req.ID, upID: c.next, method: req.Method, signal: make(chan struct{}, 1)}
	if !b.id.IsValid() {
		b.id, b.own = mustID(b.upID), true
	} else {
		c.principals[identity.Principal(ctx)] = true
	}
	if req.Method == "subscriptions/listen" {
		var p struct {
			Notifications struct {
				Tools     bool     `json:"toolsListChanged"`
				Prompts   bool     `json:"promptsListChanged"`
				Resources bool     `json:"resourcesListChanged"`
				URIs      []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		}
		json.Unmarshal(req.Params, &p)
		n := p.Notifications
		b.wants = map[string]bool{"notifications/tools/list_changed": n.Tools, "notifications/prompts/list_changed": n.Prompts,
			"notifications/resources/list_changed": n.Resources, "notifications/resources/updated": len(n.URIs) > 0}
		b.uris = map[string]bool{}
		for _, u := range n.URIs {
			b.uris[u] = true
		}
	}
	c.pending[b.upID] = b
	return b
}

// finish forgets b; it reports whether b was still waiting.
func (c *bridgeConn) finish(b *bridged) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[b.upID] != b {
		return false
	}
	delete(c.pending, b.upID)
	for t, x := range c.tokens {
		if x == b {
			delete(c.tokens, t)
		}
	}
	return true
}

// tokenOf gives b's progress token, if its params have one, a token of
// the bridge's, and returns it ("" for none).
func (c *bridgeConn) tokenOf(b *bridged, params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta["progressToken"]) == 0 {
		return ""
	}
	b.token = p.Meta["progressToken"]
	t := "preflight-" + strconv.FormatInt(b.upID, 10)
	c.mu.Lock()
	c.tokens[t] = b
	c.mu.Unlock()
	return t
}

// params returns the params of a request going upstream: with the bridge's
// progress token, when there is one, and without the stateless revision's
// _meta keys for a legacy upstream.
func (c *bridgeConn) params(params json.RawMessage, token string) json.RawMessage {
	if token == "" && !c.legacy {
		return params
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params
	}
	var meta map[string]json.RawMessage
	json.Unmarshal(p["_meta"], &meta)
	if token != "" {
		meta["progressToken"] = mustJSON(token)
	}
	if c.legacy {
		for _, k := range []string{metaVersion, "io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/logLevel"} {
			delete(meta, k)
		}
	}
	if len(meta) == 0 {
		delete(p, "_meta")
	} else {
		p["_meta"] = mustJSON(meta)
	}
	return mustJSON(p)
}

// write sends msg upstream.
func (c *bridgeConn) write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.done:
		return fmt.Errorf("the upstream connection ended: %w", c.err)
	default:
	}
	return c.conn.Write(ctx, msg)
}

// read routes what the upstream sends until the connection ends; then
// every request in flight fails, its outcome unknown.
func (c *bridgeConn) read(p *Proxy) {
	var err error
	for {
		var msg jsonrpc.Message
		if msg, err = c.conn.Read(context.Background()); err != nil {
			break
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			c.answer(m)
		case *jsonrpc.Request:
			if m.IsCall() {
				go c.serverRequest(m)
			} else {
				c.notification(m)
			}
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the upstream closed its output")
	}
	p.log.Warn("mcp proxy: the stateless bridge's upstream connection ended", "err", err)
	c.conn.Close()
	p.giveProc()
	c.mu.Lock()
	c.err = err
	close(c.done)
	pending := c.pending
	c.pending, c.tokens = map[int64]*bridged{}, map[string]*bridged{}
	c.mu.Unlock()
	for _, b := range pending {
		b.fail(fmt.Errorf("the upstream connection ended during the request: %w", err))
	}
}

// answer hands a response to its request, under the client's id.
func (c *bridgeConn) answer(res *jsonrpc.Response) {
	n, ok := res.ID.Raw().(int64)
	if !ok {
		return
	}
	c.mu.Lock()
	b := c.pending[n]
	c.mu.Unlock()
	if b == nil || !c.finish(b) {
		return // cancelled, or not the bridge's
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: b.id, Result: res.Result, Error: res.Error})
	if err != nil {
		b.fail(err)
		return
	}
	b.push(data, true)
}

// notification routes a notification of the upstream (see bridge).
func (c *bridgeConn) notification(n *jsonrpc.Request) {
	if n.Method == "notifications/tools/list_changed" {
		c.br.forgetTools()
	}
	var p map[string]json.RawMessage
	json.Unmarshal(n.Params, &p)
	var meta map[string]json.RawMessage
	json.Unmarshal(p["_meta"], &meta)
	c.mu.Lock()
	var to []*bridged
	switch {
	case n.Method == "notifications/progress":
		var t string
		json.Unmarshal(p["progressToken"], &t)
		if b := c.tokens[t]; b != nil {
			p["progressToken"] = b.token
			to = append(to, b)
		}
	case n.Method == "notifications/cancelled":
		// It names a request of the upstream's own, which the bridge
		// answered at once (serverRequest).
	case n.Method == "notifications/subscriptions/acknowledged":
		// To the stream it names, else to the oldest not yet
		// acknowledged.
		b := c.pending[subscriptionOf(meta)]
		if b == nil || b.method != "subscriptions/listen" {
			b = nil
			for _, x := range c.pending {
				if x.method == "subscriptions/listen" && !x.acked && (b == nil || x.upID < b.upID) {
					b = x
				}
			}
		}
		if b != nil {
			b.acked = true
			to = append(to, b)
		}
	case meta["io.modelcontextprotocol/subscriptionId"] != nil || n.Method == "notifications/resources/updated" ||
		strings.HasSuffix(n.Method, "/list_changed"):
		// The upstream keeps one subscription per kind: every stream
		// that asked for this kind gets it.
		var uri string
		json.Unmarshal(p["uri"], &uri)
		for _, b := range c.pending {
			if b.method == "subscriptions/listen" && b.wants[n.Method] && (n.Method != "notifications/resources/updated" || b.uris[uri]) {
				to = append(to, b)
			}
		}
	default:
		// Nothing says whose it is: it goes to the one client request in
		// flight, if there is one, and only while the connection has
		// carried the requests of one principal (a late message of a
		// request that ended must not reach another principal).
		var only []*bridged
		for _, b := range c.pending {
			if !b.own && b.method != "subscriptions/listen" {
				only = append(only, b)
			}
		}
		if len(only) == 1 && len(c.principals) == 1 {
			to = only
		}
	}
	c.mu.Unlock()
	for _, b := range to {
		q := p
		if meta["io.modelcontextprotocol/subscriptionId"] != nil {
			m2 := map[string]json.RawMessage{}
			for k, v := range meta {
				m2[k] = v
			}
			m2["io.modelcontextprotocol/subscriptionId"] = mustJSON(b.id.Raw())
			q = map[string]json.RawMessage{}
			for k, v := range p {
				q[k] = v
			}
			q["_meta"] = mustJSON(m2)
		}
		params := n.Params
		if len(p) > 0 {
			params = mustJSON(q)
		}
		data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: n.Method, Params: params})
		if err == nil {
			b.push(data, false)
		}
	}
}

// subscriptionOf returns the upstream id of the subscriptions/listen
// request that meta names, 0 for none.
func subscriptionOf(meta map[string]json.RawMessage) int64 {
	var id float64
	json.Unmarshal(meta["io.modelcontextprotocol/subscriptionId"], &id)
	return int64(id)
}

// serverRequest answers a request of the upstream: ping with an empty
// result; anything else (sampling, elicitation, roots), which would need
// a client on the other end of a session, with method not found saying
// so.
func (c *bridgeConn) serverRequest(r *jsonrpc.Request) {
	res := &jsonrpc.Response{ID: r.ID}
	if r.Method == "ping" {
		res.Result = json.RawMessage("{}")
	} else {
		res.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "preflight proxy: " + strconv.Quote(r.Method) +
			" cannot reach the client: it speaks the stateless revision (2026-07-28), which the proxy bridges to this stdio upstream over one shared connection; a server asks such a client for input with an input_required result"}
	}
	c.write(context.Background(), res)
}
