package einoguard_test

import (
	"context"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// TestChatModelAgentScript runs the scripted session through eino's
// ChatModelAgent and Runner, the middleware in its ToolsConfig: no event
// may carry an error.
func TestChatModelAgentScript(t *testing.T) {
	ctx := context.Background()
	ts := agenttest.NewTools()
	rec := agenttest.NewRecorder(ts)
	g := newGuard(t)
	ag, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name:        "assistant",
		Description: "runs the script",
		Model:       &scriptedModel{rec},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools:               scriptTools(t, ts),
			ToolCallMiddlewares: []compose.ToolMiddleware{g.Middleware()},
		}},
		MaxIterations: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	events := adk.NewRunner(ctx, adk.RunnerConfig{Agent: ag}).Query(ctx, "go")
	var last string
	for {
		ev, ok := events.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			t.Fatalf("the run was aborted: %v", ev.Err)
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil && ev.Output.MessageOutput.Message != nil &&
			ev.Output.MessageOutput.Message.Role == schema.Assistant {
			last = ev.Output.MessageOutput.Message.Content
		}
	}
	if last != "done" {
		t.Fatalf("the run ended with %q", last)
	}
	t.Log(rec.Verify(t, g.Session().Guard()))
}
