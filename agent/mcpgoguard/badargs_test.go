package mcpgoguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestBadArguments: a call whose arguments are not an object, or break
// the tool's inputSchema, never reaches the handler; the client reads an
// isError result saying what was expected, and the decision in _meta.
func TestBadArguments(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	g, err := mcpgoguard.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := scenarioServer(sc, inBand)
	srv.Use(g.Middleware())
	cl := connect(t, srv)
	for _, c := range []struct {
		args json.RawMessage
		want string
	}{
		{json.RawMessage(`[1]`), `not run: the arguments of "web_search" are not a JSON object (found an array)`},
		{json.RawMessage(`{"q":7}`), `not run: the arguments of "web_search" break its input schema (/q:`},
		{json.RawMessage(`{}`), `not run: the arguments of "web_search" break its input schema`},
	} {
		var req mcp.CallToolRequest
		req.Params.Name = agenttest.Search
		req.Params.Arguments = c.args
		res, err := cl.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		text := res.Content[0].(mcp.TextContent).Text
		if !res.IsError || !strings.HasPrefix(text, c.want) || res.Meta == nil || res.Meta.AdditionalFields[mcpgoguard.MetaKey] == nil {
			t.Fatalf("%s: isError %v, %q, meta %+v; want %q…", c.args, res.IsError, text, res.Meta, c.want)
		}
	}
	if n := sc.Counts()[agenttest.Search]; n != 0 {
		t.Fatalf("the search ran %d times", n)
	}
}
