package anthropicguard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// scriptedModel is an httptest server speaking the Messages API in place
// of Claude, the one part of these sessions that is scripted (the model
// is out of a test's reach): each request is answered with the tool_use
// blocks of the script's next turn (stop_reason tool_use), or with the
// text "done" (end_turn) once next returns nil. It hands the tool results
// it reads to result, when set: the text of each tool_result, "Error: …"
// for an is_error one, as the runner writes it.
type scriptedModel struct {
	next   func() []agenttest.Call
	result func(id string, b []byte)

	mu   sync.Mutex
	seen map[string]bool // tool results already handed on
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"unexpected request"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	for _, msg := range req.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if msg.Role != "user" || json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type != "tool_result" || m.seen[b.ToolUseID] {
				continue
			}
			m.seen[b.ToolUseID] = true
			if m.result != nil {
				m.result(b.ToolUseID, []byte(contentText(b.Content)))
			}
		}
	}
	m.mu.Unlock()
	calls := m.next()
	content := []map[string]any{}
	stop := "tool_use"
	for _, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Tool, "input": json.RawMessage(c.Args)})
	}
	if calls == nil {
		content, stop = []map[string]any{{"type": "text", "text": "done"}}, "end_turn"
	}
	if req.Stream {
		m.stream(w, calls)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "msg", "type": "message", "role": "assistant", "model": "scripted",
		"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}})
}

// stream answers a streaming request with the same message as server-sent
// events, as the Messages API streams one: each tool_use block started
// with an empty input, its input sent as one input_json_delta; the text
// "done" as one text_delta.
func (m *scriptedModel) stream(w http.ResponseWriter, calls []agenttest.Call) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	event("message_start", map[string]any{"message": map[string]any{"id": "msg", "type": "message", "role": "assistant", "model": "scripted",
		"content": []any{}, "usage": map[string]any{"input_tokens": 1, "output_tokens": 0}}})
	stop := "tool_use"
	for i, c := range calls {
		event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Tool, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": c.Args}})
		event("content_block_stop", map[string]any{"index": i})
	}
	if calls == nil {
		stop = "end_turn"
		event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": "done"}})
		event("content_block_stop", map[string]any{"index": 0})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 1}})
	event("message_stop", map[string]any{})
}

// contentText is the text of a tool_result's content: a string, or text
// blocks one a line.
func contentText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var blocks []struct{ Text string }
	json.Unmarshal(c, &blocks)
	var text []string
	for _, b := range blocks {
		text = append(text, b.Text)
	}
	return strings.Join(text, "\n")
}

// client returns an SDK client of m.
func client(t *testing.T, m *scriptedModel) anthropic.Client {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
}
