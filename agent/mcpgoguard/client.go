package mcpgoguard

import (
	"context"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Client is an mcp-go client whose tool calls are guarded, one session
// for the client (see Guard.Client). Every method but CallTool,
// ListTools and ListToolsByPage is the wrapped client's.
type Client struct {
	client.MCPClient
	st *state
}

// Client returns c with its tool calls guarded, as a session of its own:
//
//	c = guard.Client(c)
//
// The tools c lists are read on the way (their inputSchema and
// annotations: only a tool annotated readOnlyHint, or given read-only
// effects by a spec, is ever reused or coalesced); before the first
// guarded call the tools are listed once on c's behalf if c has not
// listed them. A call is answered as the server middleware answers it
// (see Guard.Middleware); the server's error is returned unchanged. Give
// each call the model's tool call id with WithCallID, and a withheld
// retry names the call it repeats by it.
func (g *Guard) Client(c client.MCPClient) *Client {
	st, _ := g.newState() // New built one from the same options
	return &Client{MCPClient: c, st: st}
}

// Session returns the client's session: its ledger, and the money spent
// (Session().Guard().SpentUSD(ctx)).
func (c *Client) Session() *tools.Session { return c.st.s }

// ListTools lists the tools and reads them.
func (c *Client) ListTools(ctx context.Context, req mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	res, err := c.MCPClient.ListTools(ctx, req)
	c.saw(res, err, true)
	return res, err
}

// ListToolsByPage lists one page of the tools and reads it.
func (c *Client) ListToolsByPage(ctx context.Context, req mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	res, err := c.MCPClient.ListToolsByPage(ctx, req)
	c.saw(res, err, false)
	return res, err
}

func (c *Client) saw(res *mcp.ListToolsResult, err error, all bool) {
	if err != nil || res == nil {
		return
	}
	for i := range res.Tools {
		c.st.learn(&res.Tools[i])
	}
	if all {
		c.st.mu.Lock()
		c.st.listed = true
		c.st.mu.Unlock()
	}
}

// CallTool guards one tool call.
func (c *Client) CallTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c.st.mu.Lock()
	listed := c.st.listed
	c.st.mu.Unlock()
	if !listed {
		c.ListTools(ctx, mcp.ListToolsRequest{}) // a failure leaves the tools known by name
	}
	c.st.learn(&mcp.Tool{Name: req.Params.Name})
	id, _ := ctx.Value(callIDKey{}).(string)
	ctx = adapt.WithCallID(ctx, &c.st.ids, id)
	return c.st.call(ctx, req.Params.Name, arguments(req.Params), func(ctx context.Context) (*mcp.CallToolResult, error) {
		return c.MCPClient.CallTool(ctx, req)
	})
}

type callIDKey struct{}

// WithCallID returns ctx carrying the model's id of the tool call about
// to be made through a Client: a call that runs is noted under it, and a
// withheld retry names the call it repeats by it instead of preflight's
// own step id.
func WithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}
