package einoguard_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/einoguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
)

// TestZeroConfig plays the idiom scenario (WrapToolWithErrorHandler)
// through a ReAct agent with no specs: the guard knows each tool by name
// from its first call, or by its ToolInfo (name and parameters' schema)
// after Describe, so a terminal failure is not retried (the ticket runs
// once); eino does not say which tools are read-only, so nothing is
// reused until a spec says so (then 5 / 2 / 2 / 1, with no schema or
// price restated).
func TestZeroConfig(t *testing.T) {
	readOnly := func(name string) tools.Spec {
		return tools.Spec{Operation: preflight.Operation{Name: name, Effects: preflight.EffectsReadOnly}}
	}
	text := func(t tool.BaseTool) tool.BaseTool {
		return utils.WrapToolWithErrorHandler(t, func(_ context.Context, err error) string { return err.Error() })
	}
	for _, c := range []struct {
		name     string
		opts     *einoguard.Options
		describe bool
		want     map[string]int
	}{
		{"nil options", nil, false, map[string]int{agenttest.Search: 7, agenttest.Email: 2, agenttest.Fetch: 3, agenttest.File: 1}},
		{"nil options, described", nil, true, map[string]int{agenttest.Search: 7, agenttest.Email: 2, agenttest.Fetch: 3, agenttest.File: 1}},
		{"effects only", &einoguard.Options{Specs: []tools.Spec{readOnly(agenttest.Search), readOnly(agenttest.Fetch)}}, true,
			agenttest.ScenarioWant()},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			sc := agenttest.NewScenario()
			g, err := einoguard.New(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			ts := scenarioTools(t, sc, false, text)
			if c.describe {
				if err := g.Describe(ctx, ts...); err != nil {
					t.Fatal(err)
				}
			}
			ag, err := react.NewAgent(ctx, &react.AgentConfig{
				ToolCallingModel: &nextModel{next: sc.Next},
				ToolsConfig:      compose.ToolsNodeConfig{Tools: ts, ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()}},
				MaxStep:          100,
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ag.Generate(ctx, []*schema.Message{schema.UserMessage("go")}); err != nil {
				t.Fatalf("the run was aborted: %v", err)
			}
			if got := sc.Counts(); !maps.Equal(got, c.want) {
				t.Fatalf("executions %v, want %v", got, c.want)
			}
		})
	}
}

// TestDescribeSchema: with nil options and Describe, arguments that break
// the schema eino derived for a tool are not run; the model reads why.
func TestDescribeSchema(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	g, err := einoguard.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := scenarioTools(t, sc, false, func(t tool.BaseTool) tool.BaseTool { return t })
	if err := g.Describe(ctx, ts...); err != nil {
		t.Fatal(err)
	}
	tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{Tools: ts, ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := tn.Invoke(ctx, assistant([]agenttest.Call{{ID: "bad", Tool: agenttest.Search, Args: `{"q":7}`}}))
	if err != nil {
		t.Fatal(err)
	}
	if n := sc.Counts()[agenttest.Search]; n != 0 || len(out) != 1 || !strings.Contains(out[0].Content, `"INVALID_PAYLOAD"`) {
		t.Fatalf("searches %d, results %v; want none run, INVALID_PAYLOAD", n, out)
	}
}
