package mcpguard

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Session guards the tool calls of one MCP session for code that sees MCP
// messages as JSON, such as a proxy: it takes in tools/list results and
// answers tools/call requests, forwarding only those that should run.
// Results pass through as bytes: a reused or coalesced call is answered
// with the bytes of the earlier result. A Session is safe for concurrent
// use.
type Session struct {
	g  *guard
	st *session
}

// NewSession returns the guard of one MCP session. opts may be nil.
func NewSession(opts *Options) (*Session, error) {
	g := newGuard(opts)
	st, err := g.newSession()
	if err != nil {
		return nil, err
	}
	return &Session{g: g, st: st}, nil
}

// Agent returns the tools.Session behind s (its Guard, ledger and money).
func (s *Session) Agent() *tools.Session { return s.st.s }

// SawToolsList takes in the result of a tools/list request, one page at a
// time: cursor is the request's cursor ("" for the first page). A result
// that does not parse is ignored.
func (s *Session) SawToolsList(cursor string, result json.RawMessage) {
	var lr mcp.ListToolsResult
	if json.Unmarshal(result, &lr) != nil {
		return
	}
	s.g.sawList(s.st, &mcp.ListToolsParams{Cursor: cursor}, &lr)
}

// NeedsList reports whether the tools should be listed before a call of
// name: none were listed yet, or name is new since the last list (asked
// once per name and list).
func (s *Session) NeedsList(name string) bool { return s.st.needsList(name) }

// inputRequired reports whether a tools/call result asks the client for
// input first (resultType "input_required", the multi-round-trip results
// of the 2026-07-28 revision): the client retries the call with its
// answers, so the result is no outcome of the tool. It is recorded as a
// transient failure, which is never saved for reuse nor counted against
// the retry cap, so the retry reaches the server.
func inputRequired(result []byte) bool {
	var r struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(result, &r) == nil && r.ResultType == "input_required"
}

// CallTool guards one tools/call. params are the request's params as
// sent; forward sends the request upstream, unchanged, and returns the
// response's result, or the JSON-RPC error (a *jsonrpc.Error) or transport
// error it ended with. CallTool returns the result to answer with (the
// fresh one, a saved one, or a withheld call's result) or forward's
// error. A result of resultType "input_required" is passed on as it came
// and never reused. Params that [ReadCallParams] refuses are never forwarded:
// CallTool returns its invalid-params error, to be sent back as the
// request's JSON-RPC error.
func (s *Session) CallTool(ctx context.Context, params json.RawMessage, forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	var p struct {
		Name      string
		Arguments json.RawMessage
	}
	var err error
	if p.Name, p.Arguments, err = ReadCallParams(params); err != nil {
		return nil, err
	}
	ans, err := s.st.s.Call(ctx, p.Name, p.Arguments, func(ctx context.Context) ([]byte, preflight.Outcome, error) {
		b, err := forward(ctx)
		if err != nil {
			return nil, s.st.failed(p.Name, err), err
		}
		var res mcp.CallToolResult
		if json.Unmarshal(b, &res) != nil || inputRequired(b) {
			return b, preflight.OutcomeTransientFailure, nil
		}
		return b, Classify(&res, nil), nil
	})
	var pe *preflight.Error
	switch {
	case errors.As(err, &pe):
		return json.Marshal(notEvaluated(pe, p.Name, p.Arguments, s.st.structured(p.Name)))
	case err != nil:
		return nil, err
	case ans.How == tools.HowWithheld:
		return json.Marshal(withheld(ans, p.Name, s.st.structured(p.Name)))
	}
	return ans.Result, nil
}
