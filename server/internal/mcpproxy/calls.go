package mcpproxy

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight/server/internal/rpcid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The defaults of the bounds in [Options].
const (
	// DefaultMaxCallsInFlightPerSession bounds the tools/call a session
	// has answered at once: an agent runs a handful of tools in parallel,
	// and each call in flight holds a goroutine and, upstream over HTTP, a
	// connection.
	DefaultMaxCallsInFlightPerSession = 32
	// DefaultMaxCallsInFlight bounds them across sessions: each may hold an
	// upstream connection beside its client's, so 256 stays well inside
	// the usual limit of 1024 open files.
	DefaultMaxCallsInFlight = 256
	// DefaultMaxCallsInFlightPerClient bounds them across the sessions of
	// one remote address (see MaxSessionsPerClient): a quarter of the
	// total, so that one client holding calls open cannot take the whole
	// of DefaultMaxCallsInFlight from everyone else.
	DefaultMaxCallsInFlightPerClient = DefaultMaxCallsInFlight / 4
	// DefaultCallTimeout is how long a tool call may wait for the
	// upstream: long enough for slow tools (a build, a crawl), short
	// enough that a hung server does not hold a call's resources for good.
	DefaultCallTimeout = 5 * time.Minute
	// DefaultMaxResultBytes bounds one message from the upstream, so one
	// call's result: as large as the go-sdk buffers by default.
	DefaultMaxResultBytes = 16 << 20
)

// CodeLimit is the JSON-RPC error code of a call the proxy refused or
// ended at one of its bounds (a server error, in JSON-RPC's reserved
// range). The messages name the bound and its flag.
const CodeLimit = -32000

// bounds are the proxy's limits on tool calls, shared by its sessions.
type bounds struct {
	perSession  int64
	perClient   int64
	total       int64
	inFlight    atomic.Int64 // tools/call being answered, across sessions
	callTimeout time.Duration
	maxResult   int64

	mu      sync.Mutex
	clients map[string]*clientCalls // by remote address, while it has sessions
}

// clientCalls counts the calls in flight of one remote address, shared by
// its sessions.
type clientCalls struct {
	inFlight atomic.Int64
	sessions int // guarded by bounds.mu
}

// client returns the counter of the remote address client, for one more
// session; give it back with leave.
func (b *bounds) client(client string) *clientCalls {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.clients[client]
	if c == nil {
		c = &clientCalls{}
		b.clients[client] = c
	}
	c.sessions++
	return c
}

// leave gives back a session's counter of client.
func (b *bounds) leave(client string, c *clientCalls) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.sessions--; c.sessions <= 0 && b.clients[client] == c {
		delete(b.clients, client)
	}
}

func newBounds(o *Options) *bounds {
	b := &bounds{perSession: int64(o.MaxCallsInFlightPerSession), perClient: int64(o.MaxCallsInFlightPerClient),
		total: int64(o.MaxCallsInFlight), callTimeout: o.CallTimeout, maxResult: o.MaxResultBytes,
		clients: make(map[string]*clientCalls)}
	if b.perSession <= 0 {
		b.perSession = DefaultMaxCallsInFlightPerSession
	}
	if b.perClient <= 0 {
		b.perClient = DefaultMaxCallsInFlightPerClient
	}
	if b.total <= 0 {
		b.total = DefaultMaxCallsInFlight
	}
	if b.callTimeout <= 0 {
		b.callTimeout = DefaultCallTimeout
	}
	if b.maxResult <= 0 {
		b.maxResult = DefaultMaxResultBytes
	}
	return b
}

func defaultBounds() *bounds { return newBounds(&Options{}) }

// errCallTimeout wraps context.DeadlineExceeded, so the guard knows the
// call was abandoned after it may have run.
var errCallTimeout = fmt.Errorf("the call timeout expired: %w", context.DeadlineExceeded)

func (b *bounds) timeoutError(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeLimit, Message: "preflight proxy: the upstream did not answer " + method + " within " +
		b.callTimeout.String() + " (--call-timeout); the request was cancelled upstream"}
}

func (b *bounds) tooLargeError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeLimit, Message: tooLargeMessage(b.maxResult)}
}

// admit counts a request of the client in (a tools/call, or another
// request forwarded upstream), or says why it is refused: the refusal is
// a JSON-RPC error on the request's id, sent at once, and the guard never
// sees a refused call (nothing is reserved or recorded), so the client
// may retry it when a call ends.
func (s *session) admit() *jsonrpc.Error { return s.b.admit(&s.calls, s.peer, "in this session") }

// release counts a request out.
func (s *session) release() { s.b.release(&s.calls, s.peer) }

// admit counts a request in: own counts those of its session (or
// stateless scope, which where names in a refusal), peer those of its
// remote address.
func (b *bounds) admit(own *atomic.Int64, peer *clientCalls, where string) *jsonrpc.Error {
	if n := own.Add(1); n > b.perSession {
		own.Add(-1)
		return &jsonrpc.Error{Code: CodeLimit, Message: "preflight proxy: too many calls in flight " + where + " (limit " +
			strconv.FormatInt(b.perSession, 10) + ", --max-calls-in-flight-per-session); retry when one has ended"}
	}
	if n := peer.inFlight.Add(1); n > b.perClient {
		peer.inFlight.Add(-1)
		own.Add(-1)
		return &jsonrpc.Error{Code: CodeLimit, Message: "preflight proxy: too many calls in flight from this client's address (limit " +
			strconv.FormatInt(b.perClient, 10) + ", --max-calls-in-flight-per-client); retry when one has ended"}
	}
	if n := b.inFlight.Add(1); n > b.total {
		b.inFlight.Add(-1)
		peer.inFlight.Add(-1)
		own.Add(-1)
		return &jsonrpc.Error{Code: CodeLimit, Message: "preflight proxy: too many calls in flight (limit " +
			strconv.FormatInt(b.total, 10) + ", --max-calls-in-flight); retry when one has ended"}
	}
	return nil
}

// release counts a request out.
func (b *bounds) release(own *atomic.Int64, peer *clientCalls) {
	own.Add(-1)
	peer.inFlight.Add(-1)
	b.inFlight.Add(-1)
}

// callKey is the context key of a request the proxy sends upstream: the
// upstream transport reads it to cap the response.
type callKey struct{}

// callState is what the transport and the waiting call share.
type callState struct {
	id       jsonrpc.ID
	max      int64
	cancel   func(error) // ends the call's upstream request
	tooLarge atomic.Bool
	status   atomic.Int32 // of the last HTTP response to it (capBody); 0 before one
	hops     atomic.Int32 // HTTP requests of its exchange that got a response: more than 1 after a redirect
}

// postHeader tags each POST of a session: the downstream transport hands
// the request's header along with each message of the POST, so the proxy
// knows which calls a dropped POST carried without reading its body.
const postHeader = "Preflight-Proxy-Post"

// serve serves one GET or POST of the session. When the client drops a
// POST before its calls are answered, each of them is cancelled as if the
// client had sent notifications/cancelled: the server is told and the
// upstream request ends.
//
// A POST whose body is one tools/call may be served directly (fastCall);
// one whose message the downstream transport does not take is passed
// through (passThrough).
func (s *session) serve(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost {
		s.down.ServeHTTP(w, r)
		return
	}
	if s.fastCall(w, r, body) { // which takes only ids that come back unchanged
		return
	}
	if id, bad := rpcid.FirstUnsafe(body); bad {
		refuse(w, http.StatusBadRequest, rpcid.Echo(id), codeInvalidRequest, rpcid.Rule)
		return
	}
	if s.passThrough(w, r, body) {
		return
	}
	post := strconv.FormatUint(s.posts.Add(1), 10)
	r.Header.Set(postHeader, post)
	s.down.ServeHTTP(w, r)
	if r.Context().Err() != nil {
		s.dropPost(post)
	}
}

// postOf returns the tag of the POST that carried req.
func postOf(req *jsonrpc.Request) string {
	if x, ok := req.Extra.(*mcp.RequestExtra); ok && x != nil && x.Header != nil {
		return x.Header.Get(postHeader)
	}
	return ""
}

// dropPost gives up the client's requests that POST post carried.
func (s *session) dropPost(post string) {
	var ids []jsonrpc.ID
	s.mu.Lock()
	for id, c := range s.toolCs {
		if c.post == post {
			ids = append(ids, id)
		}
	}
	for id, o := range s.in {
		if o.post == post {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.clientGone(id)
	}
}
