package anthropicguard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/anthropicguard"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// TestStreamingToolRunner plays the idiom scenario through the SDK's
// streaming tool runner (NewToolRunnerStreaming, its turns read with
// AllStreaming), which runs a turn's tools in parallel, against the
// scripted model endpoint answering with server-sent events (the one
// scripted part): 5 / 2 / 2 / 1 executions, 3 reused, 1 blocked, none
// deferred, $0.13, and the run never aborted. With Observe, which reads
// the tool_use blocks of the streamed messages, the ticket's withheld
// retry names the model's call t1; without it, preflight's own step id.
func TestStreamingToolRunner(t *testing.T) {
	for _, observe := range []bool{true, false} {
		name := "without Observe"
		if observe {
			name = "Observe"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sc := agenttest.NewScenario()
			g, err := anthropicguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
			if err != nil {
				t.Fatal(err)
			}
			read := map[string][]byte{}
			cl := client(t, &scriptedModel{next: sc.Next, result: func(id string, b []byte) { read[id] = b }})
			var opts []option.RequestOption
			if observe {
				opts = append(opts, g.Observe())
			}
			runner := cl.Beta.Messages.NewToolRunnerStreaming(g.Tools(scenarioTools(t, sc, goError)...), anthropic.BetaToolRunnerParams{
				BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: "scripted", MaxTokens: 1024,
					Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("go"))}},
				DisableThread: true,
			}, opts...)
			var said strings.Builder
			for events, err := range runner.AllStreaming(ctx) {
				if err != nil {
					t.Fatalf("the run was aborted: %v", err)
				}
				for ev, err := range events {
					if err != nil {
						t.Fatalf("the stream failed: %v", err)
					}
					if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
						said.WriteString(ev.Delta.Text)
					}
				}
			}
			if !runner.IsCompleted() || said.String() != "done" {
				t.Fatalf("the run ended with %q (completed %v)", said.String(), runner.IsCompleted())
			}
			if !observe {
				t.Log(sc.Verify(t, g.Session().Guard())) // before results are recorded: the retry names preflight's id
				if !strings.Contains(string(read["t2"]), `"RETRY_CAP_REACHED"`) {
					t.Fatalf("the ticket's retry read %s, want it withheld", read["t2"])
				}
			}
			for id, b := range read {
				sc.Result(id, b)
			}
			if observe {
				t.Log(sc.Verify(t, g.Session().Guard()))
			}
			got, err := sc.Answered(g.Session().Guard())
			if err != nil || got != agenttest.ScenarioAnswers() {
				t.Fatalf("answers %+v (%v), want %+v", got, err, agenttest.ScenarioAnswers())
			}
			t.Logf("%+v", got)
		})
	}
}
