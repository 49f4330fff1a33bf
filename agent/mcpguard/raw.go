package mcpguard

import (
	"context"
	"encoding/json"
	"fmt"

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
	x  *exactly
}

// NewSession returns the guard of one MCP session. opts may be nil.
func NewSession(opts *Options) (*Session, error) {
	g := newGuard(opts)
	if k := g.opts.Approvals.Key; len(k) > 0 && len(k) < MinApprovalKeyBytes {
		return nil, fmt.Errorf("mcpguard: the approval key has %d bytes; it needs at least %d", len(k), MinApprovalKeyBytes)
	}
	st, err := g.newSession()
	if err != nil {
		return nil, err
	}
	return &Session{g: g, st: st, x: newExactly(g.opts.Results)}, nil
}

// Agent returns the tools.Session behind s (its Guard, ledger and money).
func (s *Session) Agent() *tools.Session { return s.st.s }

// Unsigned returns result, the result of a request the guard did not
// decide (such as a task's tools/call result fetched by tasks/result) on
// its way to the client: without the receipt members an upstream put in
// its _meta when the session signs receipts (see Options.Receipts), since
// a receipt the client gets must be one the guard signed for that call.
// A result without such members, or a session that signs nothing, is
// returned as it is.
func (s *Session) Unsigned(result json.RawMessage) json.RawMessage {
	return s.st.chain.scrub(result)
}

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
// answers and the result's requestState, which continues the call (see
// "Exactly once" in exactly.go). Such a result is no outcome of the tool
// and is never saved for reuse.
func inputRequired(result []byte) bool {
	var r struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(result, &r) == nil && r.ResultType == "input_required"
}

// CallTool guards one tools/call. params are the request's params as
// sent; forward sends the request upstream, unchanged, and returns the
// response's result, or the JSON-RPC error (a *jsonrpc.Error) or transport
// error it ended with (wrapping [ErrOutcomeUnknown] when the call may have
// reached the server but no answer will come, [ErrNotRun] when the server
// refused it before any tool saw it: then nothing is charged). CallTool
// returns the result to answer with (the fresh one, a saved one, or a
// withheld call's result) or forward's error. Params that
// [ReadCallParams] refuses are never forwarded: CallTool returns its
// invalid-params error, to be sent back as the request's JSON-RPC error.
//
// A call is decided, charged and recorded once however often the client
// sends it:
//
//   - A result of resultType "input_required" is passed on as it came and
//     never reused; the call stays open (its reservation held, for at most
//     15 minutes), and the client's retry (the same tool and arguments
//     with inputResponses, and that result's requestState when it had
//     one) continues it: it is forwarded without a second decision, and
//     the call is recorded and charged when it ends. While it awaits, its
//     first request sent again gets the same input_required result; once
//     the retry came, it is a new call.
//   - A repeat of a call (the same params but for _meta, such as a call a
//     client re-issues after its stream broke) within the tool's
//     idempotency window (Spec.IdempotencySeconds, default
//     Options.Defaults', default [DefaultIdempotencySeconds]; "0" turns it
//     off) waits for the first while it is in flight and gets its answer;
//     after the first succeeded it gets the first's result, for a tool that
//     is not read-only (read-only results are reused as the TTL allows); after the
//     first ended with its outcome unknown, a tool that is not read-only
//     is not run: the repeat gets a withheld result (decision block, no
//     reason codes) whose message says the outcome is unknown. A failed
//     call is not repeated from memory: its repeat is decided again.
//   - With Options.Claims, the same holds across the processes that guard
//     one scope: a repeat of a call another process runs waits for it
//     (until shortly before ctx's deadline; then the error
//     [CodeRunningElsewhere], the call not run) and gets its result.
func (s *Session) CallTool(ctx context.Context, params json.RawMessage, forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	return s.CallToolExtra(ctx, params, nil, forward)
}

// CallToolExtra is CallTool for a request of which the server reads more
// than its params: extra is that more (such as the HTTP headers a server
// checks against the params), and a call repeats an earlier one only when
// its extra is the same too.
func (s *Session) CallToolExtra(ctx context.Context, params json.RawMessage, extra []byte, forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	cp, err := readCall(params, true)
	if err != nil {
		return nil, err
	}
	return s.once(ctx, params, extra, cp, forward)
}
