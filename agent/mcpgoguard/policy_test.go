package mcpgoguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// person approves the emails to the recipients in yes and declines the
// others, keeping what each elicitation showed.
type person struct {
	yes   map[string]bool
	shown []adapt.Approval
}

func (p *person) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	b, _ := json.Marshal(req.Params.Meta.AdditionalFields[mcpgoguard.ApprovalMetaKey])
	var ap adapt.Approval
	json.Unmarshal(b, &ap)
	p.shown = append(p.shown, ap)
	var to struct{ To string }
	json.Unmarshal(ap.Arguments, &to)
	approve := p.yes[to.To] && strings.Contains(req.Params.Message, to.To)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"approve": approve}}}, nil
}

// TestApprovalPolicy is the approval session through mcp-go's own server
// and in-process client (no model: the calls are the client's):
// send_email needs a person's approval (agenttest.ApprovalSpecs) and the
// guard's middleware asks it with an elicitation/create request showing
// the exact call, waiting for the answer with nothing reserved. The
// person approves the first email, which is sent once and charged once,
// and declines the second, which runs nothing; a client that cannot
// elicit is never sent the email.
func TestApprovalPolicy(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	store := agenttest.NewArrivals()
	g, err := mcpgoguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ApprovalSpecs(), LedgerStore: store})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewMCPServer("mail", "1.0.0", server.WithElicitation())
	srv.AddTool(mcp.NewTool(agenttest.Email, mcp.WithString("to", mcp.Required())), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r := store.Balance(t); r.ReservedUSD != agenttest.EmailPrice {
			t.Errorf("while the email runs, %s is reserved; want its price", r.ReservedUSD)
		}
		res, err := sc.EmailRun(req.GetString("to", ""))
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res)
		return mcp.NewToolResultText(string(b)), nil
	})
	srv.Use(g.Middleware())
	connect := func(h client.ElicitationHandler) *client.Client {
		t.Helper()
		var opts []client.ClientOption
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1.0.0"}
		if h != nil {
			opts = append(opts, client.WithElicitationHandler(h))
			init.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{}
		}
		c, err := client.NewInProcessClientWithOptions(srv, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		return c
	}
	check := func(when string, emails int, spent string) {
		t.Helper()
		bal := store.Balance(t)
		if n := sc.Counts()[agenttest.Email]; n != emails || bal.SpentUSD != json.Number(spent) || bal.ReservedUSD != "0" {
			t.Fatalf("%s: emails sent %d, balance %+v; want %d sent, %s spent, nothing reserved", when, n, bal, emails, spent)
		}
	}
	approval := func(res *mcp.CallToolResult, err error) string {
		var w struct {
			Preflight struct{ Approval string }
		}
		json.Unmarshal(modelView(res, err), &w)
		return w.Preflight.Approval
	}

	p := &person{yes: map[string]bool{"a@x.io": true}}
	c := connect(p)
	res, err := c.CallTool(ctx, request(agenttest.Call{ID: "e1", Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}))
	if got := string(modelView(res, err)); got != `{"sent":"a@x.io"}` {
		t.Fatalf("the approved email: %s", got)
	}
	check("the first email approved", 1, agenttest.EmailPrice)
	res, err = c.CallTool(ctx, request(agenttest.Call{ID: "e2", Tool: agenttest.Email, Args: `{"to":"b@x.io"}`}))
	if a := approval(res, err); a != adapt.ApprovalDeclined {
		t.Fatalf("the declined email: %s", modelView(res, err))
	}
	check("the second email declined", 1, agenttest.EmailPrice)
	if len(p.shown) != 2 || p.shown[1].Tool != agenttest.Email || string(p.shown[1].Arguments) != `{"to":"b@x.io"}` ||
		p.shown[1].EstimatedCostUSD != agenttest.EmailPrice || p.shown[1].Reason == "" || p.shown[1].RequestFingerprint == "" {
		t.Fatalf("the person was shown %+v", p.shown)
	}

	mute := connect(nil)
	res, err = mute.CallTool(ctx, request(agenttest.Call{ID: "e3", Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}))
	if a := approval(res, err); a != adapt.ApprovalUnavailable {
		t.Fatalf("the email of a client that cannot elicit: %s", modelView(res, err))
	}
	check("a client that cannot elicit", 1, agenttest.EmailPrice)
}
