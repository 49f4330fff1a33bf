package mcpgoguard_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// style is how a tool handler reports a failure.
type style int

const (
	goError style = iota // a Go error (the client reads a JSON-RPC error)
	inBand               // mcp.NewToolResultErrorFromErr: isError, the error's text
)

// scenarioServer is an mcp-go server with the idiom scenario's four tools,
// the search and the fetch annotated read-only, failing in style.
func scenarioServer(sc *agenttest.Scenario, st style, opts ...server.ServerOption) *server.MCPServer {
	srv := server.NewMCPServer("scenario", "1.0.0", opts...)
	add := func(name, field string, readOnly bool, run func(string) (map[string]any, error)) {
		tool := mcp.NewTool(name, mcp.WithString(field, mcp.Required()), mcp.WithReadOnlyHintAnnotation(readOnly))
		srv.AddTool(tool, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := run(req.GetString(field, ""))
			switch {
			case err != nil && st == inBand:
				return mcp.NewToolResultErrorFromErr(name+" failed", err), nil
			case err != nil:
				return nil, err
			}
			b, err := json.Marshal(res)
			return mcp.NewToolResultText(string(b)), err
		})
	}
	add(agenttest.Search, "q", true, sc.SearchRun)
	add(agenttest.Email, "to", false, sc.EmailRun)
	add(agenttest.Fetch, "url", true, sc.FetchRun)
	add(agenttest.File, "title", false, sc.FileRun)
	return srv
}

// connect returns an initialized in-process client of srv.
func connect(t *testing.T, srv *server.MCPServer) *client.Client {
	t.Helper()
	ctx := context.Background()
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "agent", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// modelView is what an agent hands the model as a tool's result: the
// structured content when there is any, else the text; a Go error as
// its text.
func modelView(res *mcp.CallToolResult, err error) []byte {
	if err != nil {
		return []byte("error: " + err.Error())
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		return b
	}
	var text []string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			text = append(text, t.Text)
		}
	}
	return []byte(strings.Join(text, "\n"))
}

// play plays the scenario's script as a model's tool loop would, the
// calls of a turn in parallel, with call, and returns what the model read
// by call id. The model is the one scripted part.
func play(sc *agenttest.Scenario, call func(ctx context.Context, c agenttest.Call) []byte) map[string][]byte {
	read := map[string][]byte{}
	var mu sync.Mutex
	for turn := sc.Next(); turn != nil; turn = sc.Next() {
		var wg sync.WaitGroup
		for _, c := range turn {
			wg.Go(func() {
				b := call(context.Background(), c)
				mu.Lock()
				read[c.ID] = b
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	return read
}

// request is the tools/call request of c.
func request(c agenttest.Call) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = c.Tool
	req.Params.Arguments = json.RawMessage(c.Args)
	return req
}

// prices are specs that give the scenario's prices and nothing else: the
// effects come from the tools' annotations.
func prices() []tools.Spec {
	specs := agenttest.ScenarioSpecs()
	for i := range specs {
		specs[i].Operation.Effects = 0
	}
	return specs
}

// TestServerIdioms plays the idiom scenario (a priced read-only search, a
// side-effecting email, a fetch that fails with a 503 once, a ticket tool
// that always fails with a 422) against a real mcp-go server guarded by
// its tool-handler middleware, through mcp-go's in-process client, only
// the model scripted, with handlers that fail with Go errors and with
// mcp-go's own isError results, the effects given by specs or read from
// the tools' annotations: 5 / 2 / 2 / 1 executions, 3 reused, 1 blocked,
// none deferred, $0.13.
func TestServerIdioms(t *testing.T) {
	for _, c := range []struct {
		name  string
		style style
		specs []tools.Spec
	}{
		{"Go errors, specs", goError, agenttest.ScenarioSpecs()},
		{"isError results, specs", inBand, agenttest.ScenarioSpecs()},
		{"isError results, annotations", inBand, prices()},
		{"Go errors, annotations", goError, prices()},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			g, err := mcpgoguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: c.specs})
			if err != nil {
				t.Fatal(err)
			}
			srv := scenarioServer(sc, c.style)
			srv.Use(g.Middleware())
			cl := connect(t, srv)
			read := play(sc, func(ctx context.Context, call agenttest.Call) []byte {
				return modelView(cl.CallTool(ctx, request(call)))
			})
			ids := g.Sessions()
			if len(ids) != 1 {
				t.Fatalf("sessions %v, want the client's one", ids)
			}
			s := g.Session(ids[0])
			t.Log(sc.Verify(t, s.Guard())) // before results are recorded: the server names calls by its own ids
			if string(read["f3"]) != string(read["f2"]) || !strings.Contains(string(read["f2"]), "page a") {
				t.Fatalf("the fetch's repeat read %s, want the success %s", read["f3"], read["f2"])
			}
			if !strings.Contains(string(read["t2"]), `"RETRY_CAP_REACHED"`) {
				t.Fatalf("the ticket's retry read %s, want it withheld", read["t2"])
			}
			for id, b := range read {
				sc.Result(id, b)
			}
			got, err := sc.Answered(s.Guard())
			if err != nil || got != agenttest.ScenarioAnswers() {
				t.Fatalf("answers %+v (%v), want %+v", got, err, agenttest.ScenarioAnswers())
			}
			t.Logf("%+v", got)
		})
	}
}

// TestClientIdioms plays the idiom scenario through a guarded mcp-go
// client against the same server unguarded, the model's tool call ids
// given with WithCallID: the same counts, and the ticket's withheld retry
// names the model's call t1.
func TestClientIdioms(t *testing.T) {
	for _, c := range []struct {
		name  string
		style style
		specs []tools.Spec
	}{
		{"Go errors, specs", goError, agenttest.ScenarioSpecs()},
		{"isError results, annotations", inBand, prices()},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			g, err := mcpgoguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: c.specs})
			if err != nil {
				t.Fatal(err)
			}
			cl := g.Client(connect(t, scenarioServer(sc, c.style)))
			for id, b := range play(sc, func(ctx context.Context, call agenttest.Call) []byte {
				return modelView(cl.CallTool(mcpgoguard.WithCallID(ctx, call.ID), request(call)))
			}) {
				sc.Result(id, b)
			}
			t.Log(sc.Verify(t, cl.Session().Guard()))
			got, err := sc.Answered(cl.Session().Guard())
			if err != nil || got != agenttest.ScenarioAnswers() {
				t.Fatalf("answers %+v (%v), want %+v", got, err, agenttest.ScenarioAnswers())
			}
			t.Logf("%+v", got)
		})
	}
}

// TestZeroConfig: with nil options the server's annotations alone make
// the search and the fetch reusable and the ticket not retried; nothing
// is charged without prices.
func TestZeroConfig(t *testing.T) {
	sc := agenttest.NewScenario()
	g, err := mcpgoguard.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := scenarioServer(sc, inBand)
	srv.Use(g.Middleware())
	cl := connect(t, srv)
	play(sc, func(ctx context.Context, call agenttest.Call) []byte {
		return modelView(cl.CallTool(ctx, request(call)))
	})
	if got := sc.Counts(); !maps.Equal(got, agenttest.ScenarioWant()) {
		t.Fatalf("executions %v, want %v", got, agenttest.ScenarioWant())
	}
}
