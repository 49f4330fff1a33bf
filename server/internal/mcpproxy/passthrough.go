package mcpproxy

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks.
//
// The MCP Go SDK's server transport checks every request of a POST
// against the methods its server handles and refuses any other with 400
// ("JSON RPC not handled") before the proxy sees it. Among those are the
// tasks of 2025-11-25: tasks/get, tasks/result, tasks/list and
// tasks/cancel, which a client sends after a task-augmented tools/call
// (one with params.task) to poll the task and fetch its result. When the
// upstream declared the tasks capability in its initialize result, a
// POST that carries one such request is served on its own goroutine
// instead: the request goes upstream unchanged under a proxy id
// (roundTrip), bounded and timed as any request, and its response is
// written to the POST as the transport writes one, a single message
// event. An upstream that did not declare tasks is not sent them: the
// client should not use them there, and an upstream that refuses a
// request it does not know (400) ends the connection in the SDK's
// transport. The task's tools/call itself is decided and charged when
// the task is created.

// taskMethods are the requests of the tasks of 2025-11-25.
var taskMethods = map[string]bool{"tasks/get": true, "tasks/result": true, "tasks/list": true, "tasks/cancel": true}

// passThrough serves the session's POST r, whose body is body, when it
// carries one tasks request for an upstream that declared tasks, and
// reports whether it did; when it did not, nothing was written.
func (s *session) passThrough(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !s.upTasks.Load() || len(r.Header.Values("Last-Event-ID")) > 0 || r.Header.Get(hdrVersion) >= statelessRevision {
		return false
	}
	// Read as the transport reads a POST of one message.
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || !req.IsCall() || !taskMethods[req.Method] {
		return false
	}
	req.Extra = &mcp.RequestExtra{Header: r.Header}
	a := s.postAnswerTo(w, req.ID)
	if a == nil {
		return true
	}
	defer a.unanswered(r, req.ID)
	sc, refusal := s.scopeOf(req)
	if refusal == nil {
		refusal = s.admit()
	}
	if refusal != nil {
		a.answer(req.ID, nil, refusal)
		return true
	}
	defer s.release()
	ctx, cancel := context.WithCancelCause(s.ctx)
	defer cancel(nil)
	// The client cancels it by notifications/cancelled (clientGone) or by
	// dropping the POST.
	s.mu.Lock()
	s.toolCs[req.ID] = toolCall{cancel: cancel}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.toolCs, req.ID)
		s.mu.Unlock()
	}()
	stop := context.AfterFunc(r.Context(), func() { cancel(errClientCancelled) })
	defer stop()
	tctx, stopTimer := context.WithTimeoutCause(ctx, s.b.callTimeout, errCallTimeout)
	defer stopTimer()
	resp, err := s.roundTrip(tctx, req.Method, req.Params, req.Extra)
	switch {
	case err == nil && resp.Error != nil:
		a.answer(req.ID, nil, resp.Error)
	case err == nil:
		// A task's result (tasks/result) carries no receipt the guard
		// signed: none the upstream put there goes on.
		a.answer(req.ID, sc.guard.Unsigned(resp.Result), nil)
	case errors.Is(context.Cause(tctx), errCallTimeout):
		a.answer(req.ID, nil, s.b.timeoutError(req.Method))
	case ctx.Err() != nil:
		if r.Context().Err() == nil { // cancelled by notifications/cancelled
			a.answer(req.ID, nil, errCancelledAnswer)
		}
	default:
		a.answer(req.ID, nil, err)
	}
	return true
}
