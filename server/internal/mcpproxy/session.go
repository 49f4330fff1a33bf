package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session is one MCP session: the downstream transport, the upstream
// connection and the guard.
type session struct {
	ctx    context.Context
	cancel context.CancelFunc
	down   *mcp.StreamableServerTransport
	dc     mcp.Connection // downstream: messages from and to the client
	up     mcp.Connection // upstream: messages to and from the server
	guard  *mcpguard.Session
	log    *slog.Logger
	once   sync.Once
	ids    atomic.Uint64 // the proxy's own request ids
	active atomic.Int64  // HTTP requests of the session being served
	last   atomic.Int64  // when the last one ended, in Unix nanoseconds

	mu      sync.Mutex
	pending map[jsonrpc.ID]*waiter // requests whose response the proxy handles
	lists   map[jsonrpc.ID]string  // the client's tools/list in flight → cursor
	initID  jsonrpc.ID             // the client's initialize request
	upErr   error                  // why the upstream connection failed, if it did
}

// waiter is a request forwarded upstream whose response the proxy awaits.
type waiter struct {
	resp   chan *jsonrpc.Response
	cancel context.CancelFunc // ends the wait when the client cancels
}

func newSession(ctx context.Context, cancel context.CancelFunc, down *mcp.StreamableServerTransport, dc, up mcp.Connection, g *mcpguard.Session, log *slog.Logger) *session {
	s := &session{ctx: ctx, cancel: cancel, down: down, dc: dc, up: up, guard: g, log: log,
		pending: make(map[jsonrpc.ID]*waiter), lists: make(map[jsonrpc.ID]string)}
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
		if req, ok := msg.(*jsonrpc.Request); ok {
			switch {
			case req.Method == "tools/call" && req.IsCall():
				go s.toolCall(req)
				continue
			case req.Method == "tools/list" && req.IsCall():
				var p struct {
					Cursor string `json:"cursor"`
				}
				json.Unmarshal(req.Params, &p)
				s.mu.Lock()
				s.lists[req.ID] = p.Cursor
				s.mu.Unlock()
			case req.Method == "initialize" && req.IsCall():
				s.mu.Lock()
				s.initID = req.ID
				s.mu.Unlock()
			case req.Method == "notifications/cancelled":
				s.cancelled(req.Params)
			}
		}
		if err := s.up.Write(s.ctx, msg); err != nil {
			s.upstreamFailed(err)
			s.log.Warn("mcp proxy: upstream write failed; closing the session", "session", logID(s.down.SessionID), "err", err)
			return
		}
	}
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
		if resp, ok := msg.(*jsonrpc.Response); ok {
			s.mu.Lock()
			w := s.pending[resp.ID]
			delete(s.pending, resp.ID)
			cursor, isList := s.lists[resp.ID]
			delete(s.lists, resp.ID)
			isInit := s.initID.IsValid() && resp.ID == s.initID
			s.mu.Unlock()
			if isInit && resp.Error == nil {
				s.initialized(resp.Result)
			}
			if w != nil {
				w.resp <- resp
				continue
			}
			if isList && resp.Error == nil {
				s.guard.SawToolsList(cursor, resp.Result)
			}
		}
		if err := s.dc.Write(s.ctx, msg); err != nil && s.ctx.Err() == nil {
			s.log.Debug("mcp proxy: message to the client not delivered", "session", logID(s.down.SessionID), "err", err)
		}
	}
}

// initialized tells an upstream connection that wants to know the
// protocol version the server chose.
func (s *session) initialized(result json.RawMessage) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	json.Unmarshal(result, &r)
	if u, ok := s.up.(interface{ initialized(string) }); ok && r.ProtocolVersion != "" {
		u.initialized(r.ProtocolVersion)
	}
}

// cancelled ends the wait of a tools/call the client cancelled; the
// notification itself is forwarded as usual.
func (s *session) cancelled(params json.RawMessage) {
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
	s.mu.Lock()
	w := s.pending[id]
	s.mu.Unlock()
	if w != nil {
		w.cancel()
	}
}

// toolCall answers one tools/call through the guard.
func (s *session) toolCall(req *jsonrpc.Request) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	// Params read two ways are refused by CallTool before anything is
	// forwarded; only a readable name is worth listing the tools for.
	if name, _, err := mcpguard.ReadCallParams(req.Params); err == nil && s.guard.NeedsList(name) {
		s.listTools(ctx)
	}
	result, err := s.guard.CallTool(ctx, req.Params, func(ctx context.Context) (json.RawMessage, error) {
		resp, err := s.roundTrip(ctx, req, cancel)
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	})
	if ctx.Err() != nil {
		return // cancelled by the client, or the session ended: no response
	}
	out := &jsonrpc.Response{ID: req.ID, Result: result}
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream: " + err.Error()}
		}
		out = &jsonrpc.Response{ID: req.ID, Error: we}
	}
	if err := s.dc.Write(s.ctx, out); err != nil {
		s.log.Debug("mcp proxy: tools/call response not delivered", "session", logID(s.down.SessionID), "err", err)
	}
}

// roundTrip forwards req upstream as it is and waits for its response.
func (s *session) roundTrip(ctx context.Context, req *jsonrpc.Request, cancel context.CancelFunc) (*jsonrpc.Response, error) {
	w := &waiter{resp: make(chan *jsonrpc.Response, 1), cancel: cancel}
	s.mu.Lock()
	s.pending[req.ID] = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.pending[req.ID] == w {
			delete(s.pending, req.ID)
		}
		s.mu.Unlock()
	}()
	if err := s.up.Write(ctx, req); err != nil {
		return nil, err
	}
	select {
	case r := <-w.resp:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// listTools asks the server for its tools on the proxy's own behalf,
// every page, for a client that calls before it lists.
func (s *session) listTools(ctx context.Context) {
	cursor := ""
	for range 100 {
		id := jsonrpc2ID("preflight-proxy-" + strconv.FormatUint(s.ids.Add(1), 10))
		params, _ := json.Marshal(map[string]any{"cursor": cursor})
		if cursor == "" {
			params = json.RawMessage(`{}`)
		}
		resp, err := s.roundTrip(ctx, &jsonrpc.Request{ID: id, Method: "tools/list", Params: params}, func() {})
		if err != nil || resp.Error != nil {
			return
		}
		s.guard.SawToolsList(cursor, resp.Result)
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

func jsonrpc2ID(s string) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(s)
	return id
}
