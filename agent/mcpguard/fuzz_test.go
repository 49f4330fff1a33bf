package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzSession feeds a session the tools/list result and tools/call params
// a proxy would take from the wire. Whatever they are, CallTool answers
// with a JSON result or forward's error, never panics, and a withheld
// call's result is a valid tool result; params that ReadCallParams
// refuses are never forwarded and get its invalid-params error.
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
		_, _, readErr := mcpguard.ReadCallParams(params)
		for range 2 {
			forwarded := false
			out, err := s.CallTool(context.Background(), params, func(context.Context) (json.RawMessage, error) {
				forwarded = true
				return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
			})
			if readErr != nil {
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || forwarded || out != nil {
					t.Fatalf("params ReadCallParams refuses (%v): CallTool forwarded %v, answered %s, %v; want the invalid-params error alone", readErr, forwarded, out, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if !json.Valid(out) {
				t.Fatalf("CallTool answered with invalid JSON %q", out)
			}
		}
	})
}
