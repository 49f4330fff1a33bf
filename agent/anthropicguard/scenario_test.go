package anthropicguard_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/anthropicguard"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/toolrunner"
)

// style is how a tool reports a failure.
type style int

const (
	goError style = iota // a Go error: the runner sends "Error: …" with is_error
	inBand               // the text "error: …" as the tool's result
)

// text is a result of one text block.
func text(s string) anthropic.BetaToolResultBlockParamContentUnion {
	return anthropic.BetaToolResultBlockParamContentUnion{OfText: &anthropic.BetaTextBlockParam{Text: s}}
}

// scenarioTools are the idiom scenario's four tools as runner tools.
func scenarioTools(t *testing.T, sc *agenttest.Scenario, st style) []anthropic.BetaTool {
	t.Helper()
	var out []anthropic.BetaTool
	add := func(name, field string, run func(string) (map[string]any, error)) {
		tool, err := toolrunner.NewBetaToolFromBytes(name, "the scenario's "+name,
			[]byte(`{"type":"object","properties":{"`+field+`":{"type":"string"}},"required":["`+field+`"]}`),
			func(_ context.Context, in map[string]string) (anthropic.BetaToolResultBlockParamContentUnion, error) {
				res, err := run(in[field])
				switch {
				case err != nil && st == inBand:
					return text("error: " + err.Error()), nil
				case err != nil:
					return anthropic.BetaToolResultBlockParamContentUnion{}, err
				}
				b, err := json.Marshal(res)
				return text(string(b)), err
			})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool)
	}
	add(agenttest.Search, "q", sc.SearchRun)
	add(agenttest.Email, "to", sc.EmailRun)
	add(agenttest.Fetch, "url", sc.FetchRun)
	add(agenttest.File, "title", sc.FileRun)
	return out
}

// TestToolRunner plays the idiom scenario (a priced read-only search, a
// side-effecting email, a fetch that fails with a 503 once, a ticket tool
// that always fails with a 422) through the SDK's BetaToolRunner, which
// runs a turn's tools in parallel, against a scripted model endpoint
// (httptest; the runner without a message thread, so that the endpoint is
// the plain Messages API), with tools that fail with Go errors and with
// "error: …" texts, the guard with no Classify: 5 / 2 / 2 / 1 executions,
// 3 reused, 1 blocked, none deferred, $0.13, and the run never aborted.
// With Observe the ticket's withheld retry names the model's call t1;
// without it, preflight's own step id.
func TestToolRunner(t *testing.T) {
	for _, c := range []struct {
		name    string
		style   style
		observe bool
	}{
		{"Go errors, Observe", goError, true},
		{"error texts, Observe", inBand, true},
		{"Go errors", goError, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			sc := agenttest.NewScenario()
			g, err := anthropicguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
			if err != nil {
				t.Fatal(err)
			}
			read := map[string][]byte{}
			cl := client(t, &scriptedModel{next: sc.Next, result: func(id string, b []byte) { read[id] = b }})
			var opts []option.RequestOption
			if c.observe {
				opts = append(opts, g.Observe())
			}
			runner := cl.Beta.Messages.NewToolRunner(g.Tools(scenarioTools(t, sc, c.style)...), anthropic.BetaToolRunnerParams{
				BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: "scripted", MaxTokens: 1024,
					Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("go"))}},
				DisableThread: true,
			}, opts...)
			msg, err := runner.RunToCompletion(ctx)
			if err != nil {
				t.Fatalf("the run was aborted: %v", err)
			}
			if len(msg.Content) != 1 || msg.Content[0].Text != "done" {
				t.Fatalf("the run ended with %+v", msg.Content)
			}
			if !c.observe {
				t.Log(sc.Verify(t, g.Session().Guard())) // before results are recorded: the retry names preflight's id
				if string(read["f3"]) != string(read["f2"]) || !strings.Contains(string(read["f2"]), "page a") {
					t.Fatalf("the fetch's repeat read %s, want the success %s", read["f3"], read["f2"])
				}
				if !strings.Contains(string(read["t2"]), `"RETRY_CAP_REACHED"`) {
					t.Fatalf("the ticket's retry read %s, want it withheld", read["t2"])
				}
			}
			for id, b := range read {
				sc.Result(id, b)
			}
			if c.observe {
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

// TestHandWrittenLoop plays the scenario through a loop written by hand
// against the Messages API (client.Messages.New, no runner), each turn's
// tool_use blocks guarded with Call in parallel: the same counts, and the
// ticket's withheld retry names the model's call t1.
func TestHandWrittenLoop(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	g, err := anthropicguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	cl := client(t, &scriptedModel{next: sc.Next, result: sc.Result})
	run := map[string]func(string) (map[string]any, error){agenttest.Search: sc.SearchRun, agenttest.Email: sc.EmailRun, agenttest.Fetch: sc.FetchRun, agenttest.File: sc.FileRun}
	field := map[string]string{agenttest.Search: "q", agenttest.Email: "to", agenttest.Fetch: "url", agenttest.File: "title"}
	messages := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("go"))}
	for range 50 {
		msg, err := cl.Messages.New(ctx, anthropic.MessageNewParams{Model: "scripted", MaxTokens: 1024, Messages: messages})
		if err != nil {
			t.Fatal(err)
		}
		messages = append(messages, msg.ToParam())
		if msg.StopReason != anthropic.StopReasonToolUse {
			break
		}
		var uses []anthropic.ToolUseBlock
		for _, b := range msg.Content {
			if b.Type == "tool_use" {
				uses = append(uses, b.AsToolUse())
			}
		}
		results := make([]anthropic.ContentBlockParamUnion, len(uses))
		var wg sync.WaitGroup
		for i, u := range uses {
			wg.Go(func() {
				results[i] = g.Call(ctx, u, func(_ context.Context, input json.RawMessage) (string, error) {
					var in map[string]string
					if err := json.Unmarshal(input, &in); err != nil {
						return "", err
					}
					res, err := run[u.Name](in[field[u.Name]])
					if err != nil {
						return "", err
					}
					b, err := json.Marshal(res)
					return string(b), err
				})
			})
		}
		wg.Wait()
		messages = append(messages, anthropic.NewUserMessage(results...))
	}
	t.Log(sc.Verify(t, g.Session().Guard()))
	got, err := sc.Answered(g.Session().Guard())
	if err != nil || got != agenttest.ScenarioAnswers() {
		t.Fatalf("answers %+v (%v), want %+v", got, err, agenttest.ScenarioAnswers())
	}
	t.Logf("%+v", got)
}

// TestZeroConfig: with nil options the runner's tools are known by name
// and input schema, so the ticket's terminal failure is not retried;
// nothing is reused until a spec says a tool is read-only.
func TestZeroConfig(t *testing.T) {
	sc := agenttest.NewScenario()
	g, err := anthropicguard.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := client(t, &scriptedModel{next: sc.Next})
	runner := cl.Beta.Messages.NewToolRunner(g.Tools(scenarioTools(t, sc, goError)...), anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: "scripted", MaxTokens: 1024,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("go"))}},
		DisableThread: true,
	})
	if _, err := runner.RunToCompletion(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{agenttest.Search: 7, agenttest.Email: 2, agenttest.Fetch: 3, agenttest.File: 1}
	if got := sc.Counts(); !maps.Equal(got, want) {
		t.Fatalf("executions %v, want %v", got, want)
	}
	// A schema the runner's tool declares is checked before the tool runs.
	tool := g.Tool(scenarioTools(t, sc, goError)[0])
	res, err := tool.Execute(context.Background(), json.RawMessage(`{"q":7}`))
	if err != nil || len(res) != 1 || res[0].OfText == nil || !strings.Contains(res[0].OfText.Text, `"decision":"block"`) {
		t.Fatalf("a call breaking the schema: %v, %v; want a block", res, err)
	}
	if sc.Counts()[agenttest.Search] != 7 {
		t.Fatalf("the search ran on arguments that break its schema")
	}
}
