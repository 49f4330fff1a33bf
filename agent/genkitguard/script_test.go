package genkitguard_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// defineScriptedModel stands in for the language model, the one part of
// an agent a test cannot run: it requests the tool calls of the script's
// next turn and records the tool responses it is given.
func defineScriptedModel(g *genkit.Genkit, name string, next func() []agenttest.Call, result func(id string, b []byte)) ai.Model {
	opts := &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}}
	return genkit.DefineModelAction(g, "test/"+name, opts, func(_ context.Context, req *ai.ModelRequest, _ any, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		for _, m := range req.Messages {
			for _, p := range m.Content {
				if p.ToolResponse != nil {
					b, err := json.Marshal(p.ToolResponse.Output)
					if err != nil {
						return nil, err
					}
					result(p.ToolResponse.Ref, b)
				}
			}
		}
		calls := next()
		if calls == nil {
			return &ai.ModelResponse{Message: ai.NewModelTextMessage("done"), FinishReason: ai.FinishReasonStop}, nil
		}
		parts := make([]*ai.Part, len(calls))
		for i, c := range calls {
			var in map[string]any
			if err := json.Unmarshal([]byte(c.Args), &in); err != nil {
				return nil, err
			}
			parts[i] = ai.NewToolRequestPart(&ai.ToolRequest{Name: c.Tool, Ref: c.ID, Input: in})
		}
		return &ai.ModelResponse{Message: ai.NewModelMessage(parts...), FinishReason: ai.FinishReasonStop}, nil
	})
}

// defineTools defines the script's three tools with genkit.DefineTool.
func defineTools(g *genkit.Genkit, ts *agenttest.Tools) []ai.ToolRef {
	q := genkit.DefineTool(g, agenttest.Quote, "Real-time quote (billed per call).",
		func(_ *ai.ToolContext, in agenttest.QuoteArgs) (map[string]any, error) {
			return ts.QuoteRun(in.Symbol), nil
		})
	tk := genkit.DefineTool(g, agenttest.Ticket, "Create a ticket.",
		func(_ *ai.ToolContext, in agenttest.TicketArgs) (map[string]any, error) {
			return ts.TicketRun(in.Title), nil
		})
	f := genkit.DefineTool(g, agenttest.Flaky, "Search an index.",
		func(_ *ai.ToolContext, in agenttest.SearchArgs) (map[string]any, error) {
			return ts.FlakyRun(in.Q), nil
		})
	return []ai.ToolRef{q, tk, f}
}

// TestScript runs the scripted session through genkit.Generate with the
// guard attached by ai.WithUse: one Generate, which no decision may abort.
func TestScript(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	ts := agenttest.NewTools()
	rec := agenttest.NewRecorder(ts)
	m := defineScriptedModel(g, "script", rec.Next, rec.Result)
	guard, err := genkitguard.New(&genkitguard.Options{BudgetUSD: agenttest.BudgetUSD, Specs: agenttest.Specs(), Classify: agenttest.Classify})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(defineTools(g, ts)...),
		ai.WithMaxTurns(50), ai.WithUse(guard))
	if err != nil {
		t.Fatalf("the run was aborted: %v", err)
	}
	if resp.Text() != "done" || resp.FinishReason != ai.FinishReasonStop {
		t.Fatalf("the run ended with %q (%s)", resp.Text(), resp.FinishReason)
	}
	t.Log(rec.Verify(t, guard.Session().Guard()))
}

// turns returns a script of fixed turns for defineScriptedModel.
func turns(ts ...[]agenttest.Call) func() []agenttest.Call {
	var n atomic.Int32
	return func() []agenttest.Call {
		i := int(n.Add(1)) - 1
		if i >= len(ts) {
			return nil
		}
		return ts[i]
	}
}
