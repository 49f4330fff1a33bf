package mcpgoguard_test

import (
	"context"
	"fmt"

	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// An mcp-go server guarded with one line: a repeated call of a tool
// annotated read-only is answered with the saved result, and a call that
// breaks the tool's inputSchema never reaches the handler; the client
// reads why in the result.
func Example() {
	ctx := context.Background()
	guard, err := mcpgoguard.New(nil)
	if err != nil {
		panic(err)
	}
	srv := server.NewMCPServer("weather", "1.0.0",
		server.WithToolHandlerMiddleware(guard.Middleware())) // the one line

	runs := 0
	srv.AddTool(mcp.NewTool("forecast", mcp.WithString("city", mcp.Required(), mcp.MinLength(1)), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs++
			return mcp.NewToolResultText("rain in " + req.GetString("city", "")), nil
		})

	c, _ := client.NewInProcessClient(srv)
	defer c.Close()
	c.Start(ctx)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		panic(err)
	}
	for _, city := range []string{"Oslo", "Oslo", ""} {
		var req mcp.CallToolRequest
		req.Params.Name = "forecast"
		req.Params.Arguments = map[string]any{"city": city}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			panic(err)
		}
		fmt.Println(res.IsError, res.Content[0].(mcp.TextContent).Text)
	}
	fmt.Println("runs:", runs)
	// Output:
	// false rain in Oslo
	// false rain in Oslo
	// true not run: the arguments of "forecast" break its input schema (/city: expected at least 1 character, found 0); fix the arguments and call it again instead
	// runs: 1
}

// An mcp-go client guarded with one line: the tools it lists tell the
// guard which are read-only, so a repeated forecast reads the saved
// result and the server runs it once.
func ExampleGuard_Client() {
	ctx := context.Background()
	srv := server.NewMCPServer("weather", "1.0.0")
	runs := 0
	srv.AddTool(mcp.NewTool("forecast", mcp.WithString("city", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs++
			return mcp.NewToolResultText("rain in " + req.GetString("city", "")), nil
		})
	inner, _ := client.NewInProcessClient(srv)
	defer inner.Close()
	inner.Start(ctx)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1.0.0"}
	if _, err := inner.Initialize(ctx, init); err != nil {
		panic(err)
	}
	guard, err := mcpgoguard.New(nil)
	if err != nil {
		panic(err)
	}

	c := guard.Client(inner) // the one line

	for _, id := range []string{"call_1", "call_2"} {
		var req mcp.CallToolRequest
		req.Params.Name = "forecast"
		req.Params.Arguments = map[string]any{"city": "Oslo"}
		res, err := c.CallTool(mcpgoguard.WithCallID(ctx, id), req)
		if err != nil {
			panic(err)
		}
		fmt.Println(id+":", res.Content[0].(mcp.TextContent).Text)
	}
	fmt.Println("runs:", runs)
	// Output:
	// call_1: rain in Oslo
	// call_2: rain in Oslo
	// runs: 1
}
