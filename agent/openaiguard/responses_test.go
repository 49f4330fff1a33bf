package openaiguard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/openaiguard"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// responsesModel is an httptest server speaking the Responses API in
// place of the model, the one part of this session that is scripted: each
// request is answered with the function calls of the script's next turn,
// or with the message "done" once next returns nil. It hands the
// function_call_output items it reads to result.
type responsesModel struct {
	next   func() []agenttest.Call
	result func(id string, b []byte)

	read toolResults
}

func (m *responsesModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.Error(w, `{"error":{"message":"unexpected request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	for _, it := range req.Input {
		if it.Type == "function_call_output" {
			m.read.once(m.result, it.CallID, it.Output)
		}
	}
	var output []map[string]any
	for _, c := range m.next() {
		output = append(output, map[string]any{"type": "function_call", "id": "fc_" + c.ID, "call_id": c.ID, "name": c.Tool, "arguments": c.Args, "status": "completed"})
	}
	if output == nil {
		output = []map[string]any{{"type": "message", "id": "msg", "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": "done", "annotations": []any{}}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "resp", "object": "response", "created_at": 0, "model": "scripted", "status": "completed", "output": output})
}

// TestResponsesLoop plays the idiom scenario through a loop written by
// hand against the real client and a scripted Responses endpoint
// (httptest), a turn's function calls guarded with CallResponse in
// parallel: 5 / 2 / 2 / 1 executions, 3 reused, 1 blocked, none deferred,
// $0.13, and the ticket's withheld retry names the model's call t1.
func TestResponsesLoop(t *testing.T) {
	ctx := context.Background()
	sc := agenttest.NewScenario()
	g, err := openaiguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	run := runners(sc)
	srv := httptest.NewServer(&responsesModel{next: sc.Next, result: sc.Result})
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("go", responses.EasyInputMessageRoleUser)}
	done := false
	for range 50 {
		res, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "scripted", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
		if err != nil {
			t.Fatal(err)
		}
		var calls []responses.ResponseFunctionToolCall
		for _, item := range res.Output {
			if item.Type == "function_call" {
				fc := item.AsFunctionCall()
				calls = append(calls, fc)
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name))
			}
		}
		if len(calls) == 0 {
			if res.OutputText() != "done" {
				t.Fatalf("the run ended with %q", res.OutputText())
			}
			done = true
			break
		}
		outputs := make([]responses.ResponseInputItemUnionParam, len(calls))
		var wg sync.WaitGroup
		for i, fc := range calls {
			wg.Go(func() {
				outputs[i] = g.CallResponse(ctx, fc, func(_ context.Context, args json.RawMessage) (string, error) { return run[fc.Name](args) })
			})
		}
		wg.Wait()
		input = append(input, outputs...)
	}
	if !done {
		t.Fatal("the run did not end")
	}
	t.Log(sc.Verify(t, g.Session().Guard()))
	got, err := sc.Answered(g.Session().Guard())
	if err != nil || got != agenttest.ScenarioAnswers() {
		t.Fatalf("answers %+v (%v), want %+v", got, err, agenttest.ScenarioAnswers())
	}
	t.Logf("%+v", got)
}
