package mcpguard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/google/go-cmp/cmp"
)

// TestNotEvaluatedMessages: a tools/call that preflight cannot evaluate
// is answered with a message that names what is wrong with the call (the
// tool name, or what the arguments are), in the caller's terms rather
// than those of preflight's internal request.
func TestNotEvaluatedMessages(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 20) + "1" + strings.Repeat("}", 20)
	tests := []struct {
		name   string
		params string
		want   string
	}{
		{"empty name", `{"name":"","arguments":{}}`,
			`not run: the call names no tool (params.name is missing or empty); send the name of a listed tool instead`},
		{"arguments an array", `{"name":"add","arguments":[1,2]}`,
			`not run: the arguments of "add" are not a JSON object (found an array); send the arguments as one JSON object instead`},
		{"arguments a string of JSON", `{"name":"add","arguments":"{\"a\":1}"}`,
			`not run: the arguments of "add" are not a JSON object (found a string); send the arguments as one JSON object instead`},
		{"arguments a number", `{"name":"add","arguments":3}`,
			`not run: the arguments of "add" are not a JSON object (found a number); send the arguments as one JSON object instead`},
		{"nested too deep", `{"name":"add","arguments":` + deep + `}`,
			`not run: the arguments of "add" could not be checked (/a/a/a/a/a/a/a/a/a/a/a/a/a/a: document is nested deeper than 16 levels); fix the arguments and call it again instead`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := mcpguard.NewSession(nil)
			if err != nil {
				t.Fatal(err)
			}
			s.SawToolsList("", json.RawMessage(`{"tools":[{"name":"add","inputSchema":{"type":"object"}}]}`))
			forwarded := false
			out, err := s.CallTool(context.Background(), json.RawMessage(tt.params), func(context.Context) (json.RawMessage, error) {
				forwarded = true
				return json.RawMessage(`{"content":[]}`), nil
			})
			if err != nil || forwarded {
				t.Fatalf("CallTool: forwarded %v, err %v; want a withheld result", forwarded, err)
			}
			var res struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				Meta map[string]mcpguard.Withheld `json:"_meta"`
			}
			if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 1 {
				t.Fatalf("result %s: %v", out, err)
			}
			if d := cmp.Diff(tt.want, res.Content[0].Text); d != "" || !res.IsError {
				t.Errorf("message (-want +got):\n%s", d)
			}
			if got := res.Meta[mcpguard.MetaKey].Message; got != res.Content[0].Text {
				t.Errorf("the decision's message %q differs from the text block", got)
			}
		})
	}
}
