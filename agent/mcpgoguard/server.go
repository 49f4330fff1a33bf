package mcpgoguard

import (
	"context"
	"slices"

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
			st.learn(lookup(server.ServerFromContext(ctx), cs, req.Params.Name))
			return st.call(ctx, req.Params.Name, arguments(req.Params), func(ctx context.Context) (*mcp.CallToolResult, error) {
				return next(ctx, req)
			})
		}
	}
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
