package mcpguard

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server returns receiving middleware that guards the tools/call requests
// a go-sdk server receives, one guard state per server session:
//
//	server.AddReceivingMiddleware(mcpguard.Server(nil))
//
// The catalog is built from the server's own tools/list, asked of the
// handlers below the middleware. Every other request passes through
// unchanged. A stateless Streamable HTTP server has no sessions: there the
// middleware keeps nothing from one request to the next. opts may be nil.
func Server(opts *Options) mcp.Middleware { return serverMiddleware(newGuard(opts)) }

func serverMiddleware(g *guard) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			params, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			ss, sok := req.GetSession().(*mcp.ServerSession)
			if !ok || params == nil || !sok {
				return next(ctx, method, req)
			}
			st, err := g.session(ss)
			if err != nil {
				return nil, err
			}
			if st.needsList(params.Name) {
				g.list(ctx, st, func(ctx context.Context, p *mcp.ListToolsParams) (mcp.Result, error) {
					return next(ctx, "tools/list", &mcp.ServerRequest[*mcp.ListToolsParams]{Session: ss, Params: p, Extra: req.GetExtra()})
				})
			}
			return g.call(ctx, st, params.Name, params.Arguments, func(ctx context.Context) (*mcp.CallToolResult, error) {
				res, err := next(ctx, method, req)
				if err != nil {
					return nil, err
				}
				return res.(*mcp.CallToolResult), nil
			})
		}
	}
}
