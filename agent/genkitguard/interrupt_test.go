package genkitguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/genkitguard"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// TestDeferAsInterrupt: with InterruptOnDefer, a quote over the budget
// ends the Generate as a Genkit interrupt carrying the decision, not as
// an error and not as a response the model reads; the tool is not run.
func TestDeferAsInterrupt(t *testing.T) {
	ctx := context.Background()
	g := genkit.Init(ctx)
	ts := agenttest.NewTools()
	turns := [][]agenttest.Call{
		{{ID: "a", Tool: agenttest.Quote, Args: `{"symbol":"AAA"}`}},
		{{ID: "b", Tool: agenttest.Quote, Args: `{"symbol":"BBB"}`}},
	}
	next := func() []agenttest.Call {
		if len(turns) == 0 {
			return nil
		}
		c := turns[0]
		turns = turns[1:]
		return c
	}
	m := defineScriptedModel(g, "defer", next, func(string, []byte) {})
	guard, err := genkitguard.New(&genkitguard.Options{
		BudgetUSD:        "0.15",
		Specs:            agenttest.Specs(),
		InterruptOnDefer: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("go"), ai.WithTools(defineTools(g, ts)...), ai.WithUse(guard))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.FinishReason != ai.FinishReasonInterrupted {
		t.Fatalf("finish reason %q, want interrupted", resp.FinishReason)
	}
	in := resp.Interrupts()
	if len(in) != 1 || in[0].ToolRequest.Ref != "b" {
		t.Fatalf("interrupts %+v", in)
	}
	b, _ := json.Marshal(in[0].Metadata["interrupt"])
	var w struct {
		Error     string
		Preflight struct {
			Decision    preflight.Verdict
			ReasonCodes []preflight.ReasonCode
		}
	}
	json.Unmarshal(b, &w)
	if w.Preflight.Decision != preflight.VerdictDefer || len(w.Preflight.ReasonCodes) == 0 ||
		w.Preflight.ReasonCodes[0] != preflight.ReasonBudgetExceeded || w.Error == "" {
		t.Fatalf("interrupt metadata %s", b)
	}
	if n := ts.Counts()[agenttest.Quote]; n != 1 {
		t.Fatalf("quote ran %d times, want 1", n)
	}
}
