package mcpgoguard

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Middleware returns tool-handler middleware that guards the tool calls
// a server receives, one session per MCP session:
//
//	srv := server.NewMCPServer(name, version, server.WithToolHandlerMiddleware(guard.Middleware()))
//
// or srv.Use(guard.Middleware()) on a server built already. The first time
// a tool is called, the middleware looks it up in the server that
// received the call (the session's own tools first, then the server's),
// to know it by its inputSchema and annotations: only a tool annotated
// readOnlyHint (or given read-only effects by a spec) is ever reused or
// coalesced.
//
// A call is answered with the handler's result when it ran, the saved
// result when it was reused or coalesced, or a withheld result (isError,
// see [MetaKey]) when it was not run; a handler's Go error is returned
// unchanged. A result that asks the client for more input (a multi-round
// trip) is neither a failure nor a charge: the retry that carries the
// input is decided and charged as the call, once.
func (g *Guard) Middleware() server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id := ""
			cs := server.ClientSessionFromContext(ctx)
			if cs != nil {
				id = cs.SessionID()
			}
			st := g.serverState(id)
			srv := server.ServerFromContext(ctx)
			st.learn(lookup(srv, cs, req.Params.Name))
			args := arguments(req.Params)
			ctx, w := st.approve(ctx, srv, req.Params.Name, args)
			if w != nil {
				return st.withheld(w), nil
			}
			return st.call(ctx, req.Params.Name, args, func(ctx context.Context) (*mcp.CallToolResult, error) {
				return next(ctx, req)
			})
		}
	}
}

// ApprovalMetaKey is the _meta member of an approval's elicitation that
// carries the call as JSON: tool, arguments, estimatedCostUsd, reason,
// requestFingerprint and ticket (adapt.Approval).
const ApprovalMetaKey = "io.agentpreflight/approval"

// approve asks the client's person, with an elicitation/create request
// (srv.RequestElicitation) that shows the exact call, to approve a call
// of name with args that needs it (tools.Spec.Approval), and waits for
// the answer, nothing reserved. It returns the context to decide the call
// under (approved, or no approval needed), or w, the call's result when
// it is not run: declined, or the person cannot be asked (the session
// cannot elicit, or is of the 2026-07-28 generation, which a server may
// not send requests: guard such servers with agent/mcpguard, which
// answers with input_required).
func (st *state) approve(ctx context.Context, srv *server.MCPServer, name string, args json.RawMessage) (context.Context, *adapt.Withheld) {
	ap, w := st.approvals.Ask(st.s, name, args)
	switch {
	case w != nil:
		return ctx, w
	case ap == nil:
		return ctx, nil
	}
	var req mcp.ElicitationRequest
	req.Params = mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: ap.Message(),
		RequestedSchema: map[string]any{"type": "object", "required": []string{"approve"}, "properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "title": "Run this call", "description": "true runs the call shown, once; false runs nothing"}}},
		Meta: mcp.NewMetaFromMap(map[string]any{ApprovalMetaKey: ap})}
	var res *mcp.ElicitationResult
	err := server.ErrNoActiveSession
	if srv != nil {
		res, err = srv.RequestElicitation(ctx, req)
	}
	if err != nil {
		st.approvals.Answer(ctx, st.s, ap.Ticket, name, args, false) // the ticket is not left waiting
		return ctx, adapt.NotApproved(name, adapt.ApprovalUnavailable, "not run: "+name+" needs a person's approval, which could not be asked ("+err.Error()+
			"); it is not run unapproved")
	}
	yes := false
	if c, ok := res.Content.(map[string]any); ok && res.Action == mcp.ElicitationResponseActionAccept {
		yes, _ = c["approve"].(bool)
	}
	actx, _, w := st.approvals.Answer(ctx, st.s, ap.Ticket, name, args, yes)
	return actx, w
}

// lookup returns the tool name as the session cs or srv serves it; a
// tool of that name alone when neither does.
func lookup(srv *server.MCPServer, cs server.ClientSession, name string) *mcp.Tool {
	if st, ok := cs.(server.SessionWithTools); ok {
		if t, ok := st.GetSessionTools()[name]; ok {
			return &t.Tool
		}
	}
	if srv != nil {
		if t := srv.GetTool(name); t != nil {
			return &t.Tool
		}
	}
	return &mcp.Tool{Name: name}
}

// Sessions returns the ids of the MCP sessions the guard keeps state for.
func (g *Guard) Sessions() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := make([]string, 0, len(g.sessions))
	for id := range g.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
