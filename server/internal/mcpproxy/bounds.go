package mcpproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	total       int64
	inFlight    atomic.Int64 // tools/call being answered, across sessions
	callTimeout time.Duration
	maxResult   int64
}

func newBounds(o *Options) *bounds {
	b := &bounds{perSession: int64(o.MaxCallsInFlightPerSession), total: int64(o.MaxCallsInFlight),
		callTimeout: o.CallTimeout, maxResult: o.MaxResultBytes}
	if b.perSession <= 0 {
		b.perSession = DefaultMaxCallsInFlightPerSession
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

var errCallTimeout = errors.New("the call timeout expired")

func (b *bounds) timeoutError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeLimit, Message: "preflight proxy: the upstream did not answer tools/call within " +
		b.callTimeout.String() + " (--call-timeout); the call was cancelled upstream"}
}

func (b *bounds) tooLargeError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeLimit, Message: tooLargeMessage(b.maxResult)}
}

// admit counts a tools/call in, or says why it is refused: the refusal
// is a JSON-RPC error on the call's id, sent at once, and the guard never
// sees the call (nothing is reserved or recorded), so the client may
// retry it when a call ends.
func (s *session) admit() *jsonrpc.Error {
	if n := s.calls.Add(1); n > s.b.perSession {
		s.calls.Add(-1)
		return &jsonrpc.Error{Code: CodeLimit, Message: "preflight proxy: too many tool calls in flight in this session (limit " +
			strconv.FormatInt(s.b.perSession, 10) + ", --max-calls-in-flight-per-session); retry when one has ended"}
	}
	if n := s.b.inFlight.Add(1); n > s.b.total {
		s.b.inFlight.Add(-1)
		s.calls.Add(-1)
		return &jsonrpc.Error{Code: CodeLimit, Message: "preflight proxy: too many tool calls in flight (limit " +
			strconv.FormatInt(s.b.total, 10) + ", --max-calls-in-flight); retry when one has ended"}
	}
	return nil
}

// release counts a tools/call out.
func (s *session) release() {
	s.calls.Add(-1)
	s.b.inFlight.Add(-1)
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
}

// serve serves one GET or POST of the session. When the client drops a
// POST before its calls are answered, each of them is cancelled as if the
// client had sent notifications/cancelled: the server is told and the
// upstream request ends.
func (s *session) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.down.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	ids := callIDs(body)
	s.down.ServeHTTP(w, r)
	if r.Context().Err() != nil {
		for _, id := range ids {
			s.clientGone(id)
		}
	}
}

// errReader returns err, or io.EOF when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// callIDs returns the ids of the requests in a POST body: one message or
// a batch.
func callIDs(body []byte) []jsonrpc.ID {
	type head struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	var hs []head
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		json.Unmarshal(body, &hs)
	} else {
		var h head
		if json.Unmarshal(body, &h) == nil {
			hs = []head{h}
		}
	}
	var ids []jsonrpc.ID
	for _, h := range hs {
		if h.Method == "" || h.ID == nil {
			continue
		}
		if id, err := jsonrpc.MakeID(h.ID); err == nil && id.IsValid() {
			ids = append(ids, id)
		}
	}
	return ids
}
