package mcpguard

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client returns sending middleware that guards the tools/call requests a
// go-sdk client sends, one guard state per client session:
//
//	client.AddSendingMiddleware(mcpguard.Client(nil))
//
// Every other request passes through unchanged; tools/list results are
// read on the way to build the session's catalog (and listed once on the
// client's behalf before its first guarded call when it has not listed
// yet). opts may be nil.
//
// Add the same middleware as receiving middleware too, and a
// notifications/tools/list_changed from the server marks the session's
// tool list stale: the next guarded call lists the tools again before it
// is decided, so that no result is reused across a change of a tool's
// annotations. The notification then goes on to the client's own
// ToolListChangedHandler, if any:
//
//	mw := mcpguard.Client(nil)
//	client.AddSendingMiddleware(mw)
//	client.AddReceivingMiddleware(mw)
func Client(opts *Options) mcp.Middleware {
	g := newGuard(opts)
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					if st, serr := g.session(req.GetSession()); serr == nil {
						p, _ := req.GetParams().(*mcp.ListToolsParams)
						g.sawList(st, p, lr)
					}
				}
				return res, err
			case "notifications/tools/list_changed":
				if st, err := g.session(req.GetSession()); err == nil {
					g.toolsChanged(st)
				}
				return next(ctx, method, req)
			case "tools/call":
			default:
				return next(ctx, method, req)
			}
			// A type assertion on the generic request type never matches:
			// read the params instead.
			params, ok := req.GetParams().(*mcp.CallToolParams)
			if !ok || params == nil {
				return next(ctx, method, req)
			}
			st, err := g.session(req.GetSession())
			if err != nil {
				return nil, err
			}
			if st.needsList(params.Name) {
				g.list(ctx, st, func(ctx context.Context, p *mcp.ListToolsParams) (mcp.Result, error) {
					return next(ctx, "tools/list", &mcp.ClientRequest[mcp.Params]{Session: req.GetSession().(*mcp.ClientSession), Params: p})
				})
			}
			args, err := json.Marshal(params.Arguments)
			if err != nil {
				return next(ctx, method, req)
			}
			return g.call(ctx, st, params.Name, args, func(ctx context.Context) (*mcp.CallToolResult, error) {
				res, err := next(ctx, method, req)
				if err != nil {
					return nil, err
				}
				return res.(*mcp.CallToolResult), nil
			})
		}
	}
}

// list pages through tools/list with send, reading every page. Errors
// leave the catalog as it was.
func (g *guard) list(ctx context.Context, st *session, send func(context.Context, *mcp.ListToolsParams) (mcp.Result, error)) {
	p := &mcp.ListToolsParams{}
	for range 100 {
		res, err := send(ctx, p)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok {
			return
		}
		g.sawList(st, p, lr)
		if lr.NextCursor == "" {
			return
		}
		p = &mcp.ListToolsParams{Cursor: lr.NextCursor}
	}
}
