package mcpgoguard_test

import (
	"context"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestOutputSchema: a withheld call of a tool that declares an
// outputSchema carries no structuredContent (a client checks it against
// the schema, even on isError, and the server's own output validation is
// on); the decision is in _meta. A tool without one gets the
// withheld-call result as structuredContent.
func TestOutputSchema(t *testing.T) {
	type quote struct {
		Price string `json:"price"`
	}
	ctx := context.Background()
	g, err := mcpgoguard.New(&adapt.Options{BudgetUSD: "0.05", Defaults: tools.Spec{PriceUSD: "0.10"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewMCPServer("quotes", "1.0.0", server.WithToolHandlerMiddleware(g.Middleware()), server.WithOutputSchemaValidation())
	handler := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(quote{"1"}, `{"price":"1"}`), nil
	}
	srv.AddTool(mcp.NewTool("typed", mcp.WithString("s"), mcp.WithOutputSchema[quote]()), handler)
	srv.AddTool(mcp.NewTool("plain", mcp.WithString("s")), handler)
	cl := connect(t, srv)
	for _, c := range []struct {
		tool       string
		structured bool
	}{{"typed", false}, {"plain", true}} {
		var req mcp.CallToolRequest
		req.Params.Name = c.tool
		req.Params.Arguments = map[string]any{"s": "x"}
		res, err := cl.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		d, _ := res.Meta.AdditionalFields[mcpgoguard.MetaKey].(map[string]any)
		if !res.IsError || d["decision"] != string(preflight.VerdictDefer) || (res.StructuredContent != nil) != c.structured {
			t.Fatalf("%s: isError %v, decision %v, structuredContent %v; want a deferral, structured %v", c.tool, res.IsError, d["decision"], res.StructuredContent, c.structured)
		}
	}
}
