package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A go-sdk client guarded with one line: a repeated call to a read-only
// tool is answered with the saved result, and arguments that break the
// tool's inputSchema never reach it; the model reads why in the result.
func ExampleClient() {
	ctx := context.Background()

	// A server with one read-only tool that counts its runs.
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	runs := 0
	server.AddTool(&mcp.Tool{
		Name:        "forecast",
		InputSchema: json.RawMessage(`{"type":"object","required":["city"],"properties":{"city":{"type":"string","minLength":1}}}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs++
		var in struct{ City string }
		json.Unmarshal(req.Params.Arguments, &in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "rain in " + in.City}}}, nil
	})

	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1.0.0"}, nil)
	client.AddSendingMiddleware(mcpguard.Client(nil)) // the one line

	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	defer ss.Close()
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	for _, city := range []string{"Oslo", "Oslo", ""} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": city}})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	fmt.Println("runs:", runs)
	// Output:
	// false rain in Oslo
	// false rain in Oslo
	// true not run: the arguments of "forecast" break its input schema (/city: expected at least 1 character, found 0); fix the arguments and call it again instead
	// runs: 1
}
