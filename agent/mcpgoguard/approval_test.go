package mcpgoguard_test

import (
	"context"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// approver is a person who approves every elicitation, and counts them.
type approver struct{ asked int }

func (a *approver) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.asked++
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// TestApproval: an email tool that asks for approval first (a multi-round
// trip: an input-required result, then the retry with the answer) is
// charged once, when it sends, on a budget ($0.06) that holds one $0.04
// email but not two; the approved email is not deferred by its own
// request for approval. Everything but the person is mcp-go's own.
func TestApproval(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	g, err := mcpgoguard.New(&adapt.Options{BudgetUSD: agenttest.ApprovalBudgetUSD, Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewMCPServer("mail", "1.0.0", server.WithElicitation())
	srv.AddTool(mcp.NewTool(agenttest.Email, mcp.WithString("to", mcp.Required())), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		answer := server.ElicitationResponse(req.Params.InputResponses, "approve")
		if answer == nil {
			return server.NewInputRequestBuilder("send").Elicit("approve", mcp.ElicitationParams{
				Mode: mcp.ElicitationModeForm, Message: "send an email to " + req.GetString("to", "") + "?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
			}).ToolResult(), nil
		}
		if answer.Action != mcp.ElicitationResponseActionAccept {
			return mcp.NewToolResultText(`{"sent":false}`), nil
		}
		if _, err := sc.EmailRun(req.GetString("to", "")); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(`{"sent":true}`), nil
	})
	srv.Use(g.Middleware())
	person := &approver{}
	c, err := client.NewInProcessClientWithOptions(srv, client.WithElicitationHandler(person))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1.0.0"}
	init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, request(agenttest.Call{ID: "e1", Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}))
	if err != nil {
		t.Fatal(err)
	}
	spent, _ := g.Session(g.Sessions()[0]).Guard().SpentUSD(ctx)
	if got := string(modelView(res, nil)); person.asked != 1 || got != `{"sent":true}` || sc.Counts()[agenttest.Email] != 1 || spent != agenttest.EmailPrice {
		t.Fatalf("asked %d, read %s, sent %d, spent %s; want 1, sent, 1, %s", person.asked, got, sc.Counts()[agenttest.Email], spent, agenttest.EmailPrice)
	}
}
