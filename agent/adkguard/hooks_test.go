package adkguard_test

import (
	"context"
	"encoding/json"
	"iter"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/adkguard"
	"github.com/agentpreflight/preflight/agent/agenttest"
	adkagent "google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// turns returns a script of fixed turns for nextLLM.
func turns(ts ...[]agenttest.Call) func() []agenttest.Call {
	return func() []agenttest.Call {
		if len(ts) == 0 {
			return nil
		}
		t := ts[0]
		ts = ts[1:]
		return t
	}
}

func newScenarioGuard(t *testing.T, budget string) *adkguard.Guard {
	t.Helper()
	g, err := adkguard.New(&adkguard.Options{BudgetUSD: json.Number(budget), Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func spent(t *testing.T, g *adkguard.Guard) string {
	t.Helper()
	s, err := g.Session().Guard().SpentUSD(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return string(s)
}

// responses returns the function responses among parts, in order.
func responses(parts []*genai.Part) []*genai.FunctionResponse {
	var out []*genai.FunctionResponse
	for _, p := range parts {
		if p.FunctionResponse != nil {
			out = append(out, p.FunctionResponse)
		}
	}
	return out
}

// TestConfirmation: a tool with RequireConfirmation asks for it; the
// request is neither a failure nor a charge, and the email a person
// approved is sent, and charged once, on a budget ($0.06) that holds one
// $0.04 email but not two.
func TestConfirmation(t *testing.T) {
	sc := agenttest.NewScenario()
	g := newScenarioGuard(t, agenttest.ApprovalBudgetUSD)
	email, err := functiontool.New(functiontool.Config{Name: agenttest.Email, Description: "Send an email.", RequireConfirmation: true},
		func(_ adkagent.Context, in agenttest.EmailArgs) (map[string]any, error) { return sc.EmailRun(in.To) })
	if err != nil {
		t.Fatal(err)
	}
	cfg := llmagent.Config{Name: "assistant", Model: &nextLLM{next: turns([]agenttest.Call{{ID: "e1", Tool: agenttest.Email, Args: `{"to":"a@x.io"}`}})},
		Tools: []tool.Tool{email}}
	var asked string
	send := start(t, cfg, []*plugin.Plugin{g.Plugin()})
	parts := send(genai.NewContentFromText("go", genai.RoleUser))
	for _, p := range parts {
		if fc := p.FunctionCall; fc != nil && fc.Name == toolconfirmation.FunctionCallName {
			asked = fc.ID
		}
	}
	if asked == "" || sc.Counts()[agenttest.Email] != 0 || spent(t, g) != "0" {
		t.Fatalf("confirmation call %q, emails sent %d, spent %s; want a confirmation asked, nothing sent or charged", asked, sc.Counts()[agenttest.Email], spent(t, g))
	}
	// The same session, resumed with the person's approval, in a second
	// Run of the same runner.
	approve := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: asked, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": true}}}}}
	parts = send(approve)
	if n := sc.Counts()[agenttest.Email]; n != 1 || spent(t, g) != agenttest.EmailPrice {
		t.Fatalf("emails sent %d, spent %s; want 1 and %s", n, spent(t, g), agenttest.EmailPrice)
	}
	for _, r := range responses(parts) {
		if r.ID == "e1" && r.Response["sent"] != "a@x.io" {
			t.Fatalf("the approved call's response: %v", r.Response)
		}
	}
}

// TestStreamingTool: a streaming function tool, which ADK runs without
// tool callbacks, is guarded: a repeat is reused, a call over the budget
// is deferred.
func TestStreamingTool(t *testing.T) {
	sc := agenttest.NewScenario()
	g := newScenarioGuard(t, "0.025")
	search, err := functiontool.NewStreaming(functiontool.Config{Name: agenttest.Search, Description: "Search (billed)."},
		func(_ adkagent.Context, in agenttest.SearchArgs) iter.Seq2[string, error] {
			return func(yield func(string, error) bool) {
				res, _ := sc.SearchRun(in.Q)
				if yield("hits for ", nil) {
					yield(in.Q+" #"+strconv.Itoa(res["execution"].(int)), nil)
				}
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	q := func(id, s string) []agenttest.Call {
		return []agenttest.Call{{ID: id, Tool: agenttest.Search, Args: `{"q":"` + s + `"}`}}
	}
	cfg := llmagent.Config{Name: "assistant", Model: &nextLLM{next: turns(q("a", "alpha"), q("b", "alpha"), q("c", "beta"), q("d", "gamma"))},
		Tools: []tool.Tool{search}}
	rs := responses(run(t, cfg, []*plugin.Plugin{g.Plugin()}, genai.NewContentFromText("go", genai.RoleUser)))
	if n := sc.Counts()[agenttest.Search]; n != 2 || spent(t, g) != "0.02" || len(rs) != 4 {
		t.Fatalf("searches %d, spent %s, responses %d; want 2, 0.02, 4", n, spent(t, g), len(rs))
	}
	if rs[0].Response["result"] != "hits for alpha #1" || rs[1].Response["result"] != rs[0].Response["result"] {
		t.Fatalf("the repeat was not answered with the saved result: %v, %v", rs[0].Response, rs[1].Response)
	}
	if d, _ := rs[3].Response["result"].(string); !strings.Contains(d, `"decision":"defer"`) {
		t.Fatalf("the call over the budget: %v", rs[3].Response)
	}
}

// TestSubstitutedByLaterCallback: a result another before-callback (here
// the agent's, which runs after every plugin) substitutes for a call the
// guard let run is not the tool's success: not charged, not saved, and
// the same call later runs.
func TestSubstitutedByLaterCallback(t *testing.T) {
	sc := agenttest.NewScenario()
	g := newScenarioGuard(t, agenttest.ScenarioBudgetUSD)
	substituted := 0
	cfg := llmagent.Config{Name: "assistant", Tools: scenarioTools(t, sc, false),
		Model: &nextLLM{next: turns([]agenttest.Call{{ID: "a", Tool: agenttest.Search, Args: `{"q":"alpha"}`}},
			[]agenttest.Call{{ID: "b", Tool: agenttest.Search, Args: `{"q":"alpha"}`}})},
		BeforeToolCallbacks: []llmagent.BeforeToolCallback{func(adkagent.Context, tool.Tool, map[string]any) (map[string]any, error) {
			if substituted == 0 {
				substituted++
				return map[string]any{"q": "alpha", "hits": 0, "from": "cache"}, nil
			}
			return nil, nil
		}}}
	rs := responses(run(t, cfg, []*plugin.Plugin{g.Plugin()}, genai.NewContentFromText("go", genai.RoleUser)))
	if n := sc.Counts()[agenttest.Search]; n != 1 || spent(t, g) != agenttest.SearchPrice {
		t.Fatalf("searches %d, spent %s; want 1 and %s (the substituted call neither charged nor reused)", n, spent(t, g), agenttest.SearchPrice)
	}
	if len(rs) != 2 || rs[1].Response["from"] != nil {
		t.Fatalf("responses %v", rs)
	}
}

// TestDuplicateCallIDs: a model response whose two function calls share
// one id (a buggy provider) runs two distinct calls, each charged, each
// answered with its own result, in every one of 12 runs.
func TestDuplicateCallIDs(t *testing.T) {
	for i := range 12 {
		sc := agenttest.NewScenario()
		g := newScenarioGuard(t, agenttest.ScenarioBudgetUSD)
		cfg := llmagent.Config{Name: "assistant", Tools: scenarioTools(t, sc, false),
			Model: &nextLLM{next: turns([]agenttest.Call{{ID: "dup", Tool: agenttest.Search, Args: `{"q":"alpha"}`}, {ID: "dup", Tool: agenttest.Search, Args: `{"q":"beta"}`}})}}
		rs := responses(run(t, cfg, []*plugin.Plugin{g.Plugin()}, genai.NewContentFromText("go", genai.RoleUser)))
		if n := sc.Counts()[agenttest.Search]; n != 2 || spent(t, g) != "0.02" || len(rs) != 2 {
			t.Fatalf("run %d: searches %d, spent %s, responses %d; want 2, 0.02, 2", i, n, spent(t, g), len(rs))
		}
		if rs[0].Response["q"] != "alpha" || rs[1].Response["q"] != "beta" {
			t.Fatalf("run %d: results crossed: %v, %v", i, rs[0].Response, rs[1].Response)
		}
	}
}

// TestAfterHookSkipped: the guard as an agent's callbacks and a plugin
// whose after-callback returns a result, which makes ADK skip the agent's
// after-callbacks, the guard's included: the call is still settled (a
// repeat is reused, not left waiting on a call that never ends; nothing
// stays held). Only the model is scripted (nextLLM).
func TestAfterHookSkipped(t *testing.T) {
	sc := agenttest.NewScenario()
	store := agenttest.NewArrivals()
	g, err := adkguard.New(&adkguard.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs(), LedgerStore: store})
	if err != nil {
		t.Fatal(err)
	}
	stamp, err := plugin.New(plugin.Config{Name: "stamp", AfterToolCallback: func(_ adkagent.Context, _ tool.Tool, _, result map[string]any, err error) (map[string]any, error) {
		if err != nil {
			return nil, nil
		}
		out := map[string]any{"stamped": true}
		for k, v := range result {
			out[k] = v
		}
		return out, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := func(id string) []agenttest.Call {
		return []agenttest.Call{{ID: id, Tool: agenttest.Search, Args: `{"q":"alpha"}`}}
	}
	cfg := llmagent.Config{Name: "assistant", Tools: scenarioTools(t, sc, false), Model: &nextLLM{next: turns(s("a"), s("b"))},
		BeforeModelCallbacks: []llmagent.BeforeModelCallback{g.BeforeModel},
		BeforeToolCallbacks:  []llmagent.BeforeToolCallback{g.BeforeTool},
		OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{g.OnToolError},
		AfterToolCallbacks:   []llmagent.AfterToolCallback{g.AfterTool}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "t", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{stamp}}})
	if err != nil {
		t.Fatal(err)
	}
	var rs []*genai.FunctionResponse
	for ev, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("go", genai.RoleUser), adkagent.RunConfig{}) {
		if err != nil {
			t.Fatalf("the run was aborted: %v", err)
		}
		if ev.Content != nil {
			rs = append(rs, responses(ev.Content.Parts)...)
		}
	}
	bal := store.Balance(t)
	if n := sc.Counts()[agenttest.Search]; n != 1 || len(rs) != 2 || rs[1].Response["execution"] != float64(1) ||
		bal.SpentUSD != agenttest.SearchPrice || bal.ReservedUSD != "0" {
		t.Fatalf("searches %d, responses %v, balance %+v; want 1 search, the repeat reused, %s spent, nothing held", n, rs, bal, agenttest.SearchPrice)
	}
}
