package mcpguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
)

// FuzzSession feeds a session the tools/list result and tools/call params
// a proxy would take from the wire. Whatever they are, CallTool answers
// with a JSON result or forward's error, never panics, and a withheld
// call's result is a valid tool result.
func FuzzSession(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"q","inputSchema":{"type":"object","required":["s"]},"annotations":{"readOnlyHint":true}}]}`),
		[]byte(`{"name":"q","arguments":{"s":"x"}}`))
	f.Add([]byte(`{"tools":[{"name":"q","inputSchema":{"type":"object","format":"x"}}]}`), []byte(`{"name":"q","arguments":[1]}`))
	f.Add([]byte(`{}`), []byte(`{"name":"qq","arguments":null}`))
	f.Add([]byte(`null`), []byte(`not json`))
	f.Fuzz(func(t *testing.T, list, params []byte) {
		s, err := mcpguard.NewSession(nil)
		if err != nil {
			t.Fatal(err)
		}
		s.SawToolsList("", list)
		for range 2 {
			out, err := s.CallTool(context.Background(), params, func(context.Context) (json.RawMessage, error) {
				return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
			})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if !json.Valid(out) {
				t.Fatalf("CallTool answered with invalid JSON %q", out)
			}
		}
	})
}
