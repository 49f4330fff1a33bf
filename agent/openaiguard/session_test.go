package openaiguard_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// sessionModel is an httptest server speaking the Agents API's session
// events in place of the hosted agent, the one part of these sessions that
// is scripted: the session is idle; an input message starts a turn whose
// function calls are the script's turns, one after the other, each sent
// once the tool results of the one before have all been posted; then the
// turn completes and the session goes idle. It hands the tool results it
// reads to result: the output text, or the error the SDK sends for a
// failed handler.
type sessionModel struct {
	next   func() []agenttest.Call
	result func(id string, b []byte)

	mu      sync.Mutex
	events  chan map[string]any
	pending map[string]bool // calls of the current script turn awaiting results
	n       int             // events sent
}

func newSessionModel(next func() []agenttest.Call, result func(string, []byte)) *sessionModel {
	return &sessionModel{next: next, result: result, events: make(chan map[string]any, 1024), pending: map[string]bool{}}
}

// send queues an event; m.mu is held.
func (m *sessionModel) send(ev map[string]any) {
	m.n++
	ev["event_id"] = fmt.Sprintf("ev%d", m.n)
	m.events <- ev
}

// turn sends the script's next calls, or ends the turn; m.mu is held.
func (m *sessionModel) turn() {
	calls := m.next()
	if calls == nil {
		m.send(map[string]any{"type": "agent.session.turn.completed", "turn_id": "turn1"})
		m.send(map[string]any{"type": "agent.session.idle"})
		return
	}
	for _, c := range calls {
		m.pending[c.ID] = true
		m.send(map[string]any{"type": "agent.session.turn.item.added", "turn_id": "turn1",
			"item": map[string]any{"type": "function_call", "turn_id": "turn1", "call_id": c.ID, "name": c.Tool, "arguments": c.Args}})
	}
}

func (m *sessionModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/agents/sessions/sess1"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"sess1","object":"agent.session","status":"idle"}`)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/agents/sessions/sess1/events"):
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case ev := <-m.events:
				b, _ := json.Marshal(ev)
				fmt.Fprintf(w, "data: %s\n\n", b)
				w.(http.Flusher).Flush()
				if ev["type"] == "agent.session.idle" {
					return
				}
			case <-r.Context().Done():
				return
			}
		}
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/agents/sessions/sess1/events"):
		var body struct {
			Events []struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
				Error  string          `json:"error"`
			} `json:"events"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"error":{"message":"bad body","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, ev := range body.Events {
			switch ev.Type {
			case "agent.session.input.message":
				m.send(map[string]any{"type": "agent.session.turn.created", "turn_id": "turn1", "turn": map[string]any{"id": "turn1"}})
				m.turn()
			case "agent.session.input.tool_result":
				text := ev.Error
				var s string
				if json.Unmarshal(ev.Output, &s) == nil {
					text = s
				}
				m.result(ev.CallID, []byte(text))
				delete(m.pending, ev.CallID)
				if len(m.pending) == 0 {
					m.turn()
				}
			}
		}
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{}`)
	default:
		http.Error(w, `{"error":{"message":"unexpected request","type":"invalid_request_error"}}`, http.StatusNotFound)
	}
}

// TestAgentToolHandlers plays the idiom scenario (a priced read-only
// search, a side-effecting email, a fetch that fails with a 503 once, a
// ticket tool that always fails with a 422) through the SDK's agent
// session stream (client.Beta.Agents.Sessions.Stream) with guarded
// ToolHandlers, against a scripted session endpoint (httptest), the
// handlers failing with Go errors (the SDK sends the model a generic
// failure) and with {"error": …} outputs, the guard with no Classify:
// 5 / 2 / 2 / 1 executions, 3 reused, 1 blocked, none deferred, $0.13.
func TestAgentToolHandlers(t *testing.T) {
	for _, inBand := range []bool{false, true} {
		name := "Go errors"
		if inBand {
			name = "{error} outputs"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sc := agenttest.NewScenario()
			g, err := openaiguard.New(&adapt.Options{BudgetUSD: agenttest.ScenarioBudgetUSD, Specs: agenttest.ScenarioSpecs()})
			if err != nil {
				t.Fatal(err)
			}
			handlers := map[string]openai.AgentToolHandler{}
			for name, run := range runners(sc) {
				handlers[name] = func(_ context.Context, args map[string]any) (any, error) {
					b, _ := json.Marshal(args)
					s, err := run(b)
					if err != nil && inBand {
						return map[string]any{"error": err.Error()}, nil
					}
					return s, err
				}
			}
			var mu sync.Mutex
			read := map[string][]byte{}
			srv := httptest.NewServer(newSessionModel(sc.Next, func(id string, b []byte) {
				mu.Lock()
				read[id] = b
				mu.Unlock()
			}))
			defer srv.Close()
			client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
			stream := client.Beta.Agents.Sessions.Stream(ctx, "sess1", openai.AgentSessionStreamParams{
				Input: "go", ToolHandlers: g.Handlers(handlers)})
			defer stream.Close()
			for stream.Next() {
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("the stream ended with %v", err)
			}
			t.Log(sc.Verify(t, g.Session().Guard())) // before results are recorded: a handler is not told its call id
			if string(read["f3"]) != string(read["f2"]) || !strings.Contains(string(read["f2"]), "page a") {
				t.Fatalf("the fetch's repeat read %s, want the success %s", read["f3"], read["f2"])
			}
			if !strings.Contains(string(read["t2"]), `"RETRY_CAP_REACHED"`) {
				t.Fatalf("the ticket's retry read %s, want it withheld", read["t2"])
			}
			for id, b := range read {
				sc.Result(id, b)
			}
			got, err := sc.Answered(g.Session().Guard())
			if err != nil || got != agenttest.ScenarioAnswers() {
				t.Fatalf("answers %+v (%v), want %+v", got, err, agenttest.ScenarioAnswers())
			}
			t.Logf("%+v", got)
		})
	}
}
