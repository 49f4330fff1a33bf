package openaiguard_test

import (
	"context"
	"encoding/json"
	"maps"
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
)

// chatModel is an httptest server speaking the Chat Completions API in
// place of the model, the one part of these sessions that is scripted:
// each request is answered with the tool calls of the script's next turn
// (finish_reason tool_calls), or with the text "done" once next returns
// nil. It hands the tool messages it reads to result, when set.
type chatModel struct {
	next   func() []agenttest.Call
	result func(id string, b []byte)

	read toolResults
}

// toolResults hands each tool result a scripted endpoint reads to a
// model's result function once per call id (a client sends the whole
// conversation again each turn), and only when there is one. Safe for
// concurrent use.
type toolResults struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (r *toolResults) once(result func(id string, b []byte), id string, raw json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[id] {
		return
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[id] = true
	var s string
	json.Unmarshal(raw, &s)
	if result != nil {
		result(id, []byte(s))
	}
}

func (m *chatModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"unexpected request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			m.read.once(m.result, msg.ToolCallID, msg.Content)
		}
	}
	calls := m.next()
	message := map[string]any{"role": "assistant", "content": "done"}
	finish := "stop"
	if calls != nil {
		var tc []map[string]any
		for _, c := range calls {
			tc = append(tc, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Tool, "arguments": c.Args}})
		}
		message, finish = map[string]any{"role": "assistant", "content": nil, "tool_calls": tc}, "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl", "object": "chat.completion", "created": 0, "model": "scripted",
		"choices": []map[string]any{{"index": 0, "message": message, "finish_reason": finish}}})
}

// runners are the scenario's tools as functions of JSON arguments.
func runners(sc *agenttest.Scenario) map[string]func(json.RawMessage) (string, error) {
	tool := func(field string, run func(string) (map[string]any, error)) func(json.RawMessage) (string, error) {
		return func(args json.RawMessage) (string, error) {
			var in map[string]string
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			res, err := run(in[field])
			if err != nil {
				return "", err
			}
			b, err := json.Marshal(res)
			return string(b), err
		}
	}
	return map[string]func(json.RawMessage) (string, error){
		agenttest.Search: tool("q", sc.SearchRun), agenttest.Email: tool("to", sc.EmailRun),
		agenttest.Fetch: tool("url", sc.FetchRun), agenttest.File: tool("title", sc.FileRun),
	}
}

// chatLoop runs a tool loop written by hand against the Chat Completions
// API, a turn's tool calls guarded by g in parallel.
func chatLoop(t *testing.T, g *openaiguard.Guard, m *chatModel, run map[string]func(json.RawMessage) (string, error)) {
	t.Helper()
	ctx := context.Background()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "scripted", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")}}
	for range 50 {
		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		msg := res.Choices[0].Message
		params.Messages = append(params.Messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			if msg.Content != "done" {
				t.Fatalf("the run ended with %q", msg.Content)
			}
			return
		}
		results := make([]openai.ChatCompletionMessageParamUnion, len(msg.ToolCalls))
		var wg sync.WaitGroup
		for i, tc := range msg.ToolCalls {
			wg.Go(func() {
				results[i] = g.Call(ctx, tc, func(_ context.Context, args json.RawMessage) (string, error) {
					return run[tc.Function.Name](args)
				})
			})
		}
		wg.Wait()
		params.Messages = append(params.Messages, results...)
	}
	t.Fatal("the run did not end")
}

// TestChatLoop plays the idiom scenario (a priced read-only search, a
// side-effecting email, a fetch that fails with a 503 once, a ticket tool
// that always fails with a 422) through a loop written by hand against
// the real client and a scripted Chat Completions endpoint (httptest),
// with tools failing with Go errors and with "error: …" texts, the guard
// with no Classify: 5 / 2 / 2 / 1 executions, 3 reused, 1 blocked, none
// deferred, $0.13, and the ticket's withheld retry names the model's call
// t1.
func TestChatLoop(t *testing.T) {
	for _, inBand := range []bool{false, true} {
		name := "Go errors"
		if inBand {
			name = "error texts"
		}
		t.Run(name, func(t *testing.T) {
			sc := agenttest.NewScenario()
			g, err := openaiguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
			if err != nil {
				t.Fatal(err)
			}
			run := runners(sc)
			if inBand {
				for name, f := range maps.Clone(run) {
					run[name] = func(args json.RawMessage) (string, error) {
						s, err := f(args)
						if err != nil {
							return "error: " + err.Error(), nil
						}
						return s, nil
					}
				}
			}
			chatLoop(t, g, &chatModel{next: sc.Next, result: sc.Result}, run)
			t.Log(sc.Verify(t, g.Session().Guard()))
			got, err := sc.Answered(g.Session().Guard())
			if err != nil || got != agenttest.ScenarioAnswers() {
				t.Fatalf("answers %+v (%v), want %+v", got, err, agenttest.ScenarioAnswers())
			}
			t.Logf("%+v", got)
		})
	}
}
