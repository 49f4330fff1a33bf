package mcpgoguard_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The wiring of an mcp-go server guarded by its middleware: tools
// annotated read-only or not, a handler that fails with a Go error (the
// client reads a JSON-RPC error) and one that reports its failure as an
// isError result, the guard's session of a client dropped when the
// client's session ends, and an agent's tool loop that hands every
// answer to the model, a failed call's error too, so that neither a
// tool's failure nor a withheld call ends the run. The model is scripted
// (a real one would choose the calls): it fetches a page twice (the first
// fetch fails with a 503), searches twice, then sends one email and one
// more the budget does not hold. Over a wire, serve srv with
// server.ServeStdio or server.NewStreamableHTTPServer instead of the
// in-process client.
func Example_wiring() {
	ctx := context.Background()
	guard, err := mcpgoguard.New(&adapt.Options{BudgetUSD: "0.06", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email"}},
		{PriceUSD: "0.01", Operation: preflight.Operation{Name: "web_search"}},
	}}) // effects come from the tools' annotations
	if err != nil {
		log.Fatal(err)
	}
	hooks := &server.Hooks{}
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) { guard.Forget(s.SessionID()) })
	srv := server.NewMCPServer("tools", "1.0.0", server.WithHooks(hooks), server.WithRecovery(),
		server.WithToolHandlerMiddleware(guard.Middleware()))

	fetches := 0
	srv.AddTool(mcp.NewTool("fetch_page", mcp.WithString("url", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if fetches++; fetches == 1 {
				return nil, errors.New("HTTP 503 Service Unavailable") // the client reads a JSON-RPC error
			}
			return mcp.NewToolResultText("the page " + req.GetString("url", "")), nil
		})
	srv.AddTool(mcp.NewTool("web_search", mcp.WithString("q", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("3 hits for " + req.GetString("q", "")), nil
		})
	srv.AddTool(mcp.NewTool("send_email", mcp.WithString("to", mcp.Required()), mcp.WithDestructiveHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			to, err := req.RequireString("to")
			if err != nil {
				return mcp.NewToolResultErrorFromErr("no recipient", err), nil // a failure the model reads
			}
			return mcp.NewToolResultText("sent to " + to), nil
		})

	c := connectExample(srv)
	defer c.Close()
	for _, call := range exampleCalls() {
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = call.tool, call.args
		res, err := c.CallTool(ctx, req)
		fmt.Printf("%s read %.60s\n", call.id, answer(res, err))
	}
	spent, _ := guard.Session(guard.Sessions()[0]).Guard().SpentUSD(ctx)
	fmt.Println("fetches:", fetches, "spent: $"+spent)
	// Output:
	// c1 read error: internal error: HTTP 503 Service Unavailable
	// c2 read the page https://x.io/a
	// c3 read 3 hits for go
	// c4 read 3 hits for go
	// c5 read sent to a@x.io
	// c6 read error: not run: the estimated cost of "send_email" ($0.04; $
	// fetches: 2 spent: $0.05
}

// The same tools behind a server that is not guarded, the agent's client
// guarded instead (one session for the client), each call given the
// model's tool call id: a withheld retry names the call it repeats by it.
func Example_client() {
	ctx := context.Background()
	srv := server.NewMCPServer("tools", "1.0.0")
	fetches := 0
	srv.AddTool(mcp.NewTool("fetch_page", mcp.WithString("url", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if fetches++; fetches == 1 {
				return nil, errors.New("HTTP 503 Service Unavailable")
			}
			return mcp.NewToolResultText("the page " + req.GetString("url", "")), nil
		})
	srv.AddTool(mcp.NewTool("web_search", mcp.WithString("q", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("3 hits for " + req.GetString("q", "")), nil
		})
	srv.AddTool(mcp.NewTool("send_email", mcp.WithString("to", mcp.Required()), mcp.WithDestructiveHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("sent to " + req.GetString("to", "")), nil
		})

	guard, err := mcpgoguard.New(&adapt.Options{BudgetUSD: "0.06", Specs: []tools.Spec{
		{PriceUSD: "0.04", Operation: preflight.Operation{Name: "send_email"}},
		{PriceUSD: "0.01", Operation: preflight.Operation{Name: "web_search"}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	mcpClient := connectExample(srv)
	defer mcpClient.Close()
	c := guard.Client(mcpClient)
	for _, call := range exampleCalls() {
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = call.tool, call.args
		res, err := c.CallTool(mcpgoguard.WithCallID(ctx, call.id), req)
		fmt.Printf("%s read %.60s\n", call.id, answer(res, err))
	}
	spent, _ := c.Session().Guard().SpentUSD(ctx)
	fmt.Println("fetches:", fetches, "spent: $"+spent)
	// Output:
	// c1 read error: internal error: HTTP 503 Service Unavailable
	// c2 read the page https://x.io/a
	// c3 read 3 hits for go
	// c4 read 3 hits for go
	// c5 read sent to a@x.io
	// c6 read error: not run: the estimated cost of "send_email" ($0.04; $
	// fetches: 2 spent: $0.05
}

// answer is what the agent hands the model for a tool call: the result's
// text, "error: " before it when the result is isError (a failure, or a
// call not run), or the call's error as text (the server's JSON-RPC
// error: the tool failed), so that the run goes on.
func answer(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var text []string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	if res.IsError {
		return "error: " + strings.Join(text, "\n")
	}
	return strings.Join(text, "\n")
}

// exampleCall is a tool call the scripted model makes.
type exampleCall struct {
	id, tool string
	args     map[string]any
}

// exampleCalls are the calls of the scripted model, one a turn.
func exampleCalls() []exampleCall {
	return []exampleCall{
		{"c1", "fetch_page", map[string]any{"url": "https://x.io/a"}}, {"c2", "fetch_page", map[string]any{"url": "https://x.io/a"}},
		{"c3", "web_search", map[string]any{"q": "go"}}, {"c4", "web_search", map[string]any{"q": "go"}},
		{"c5", "send_email", map[string]any{"to": "a@x.io"}}, {"c6", "send_email", map[string]any{"to": "b@x.io"}},
	}
}

// connectExample returns an initialized in-process client of srv.
func connectExample(srv *server.MCPServer) *client.Client {
	ctx := context.Background()
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}
	return c
}
