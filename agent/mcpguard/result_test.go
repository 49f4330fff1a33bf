package mcpguard

import (
	"context"
	"errors"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestClassify(t *testing.T) {
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		err  error
		want preflight.Outcome
	}{
		{"success", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "503 hits"}}}, nil, preflight.OutcomeSuccess},
		{"404", text("404 Not Found: no such project"), nil, preflight.OutcomeTerminalFailure},
		{"validation", text("MCP error -32602: Input validation error: expected number"), nil, preflight.OutcomeTerminalFailure},
		{"503", text("upstream said 503"), nil, preflight.OutcomeTransientFailure},
		{"429", text("HTTP 429"), nil, preflight.OutcomeTransientFailure},
		{"number that is not a status", text("order 1500 rejected: closed"), nil, preflight.OutcomeTerminalFailure},
		{"price that is not a status", text("price 5.25 above limit 502.5"), nil, preflight.OutcomeTerminalFailure},
		{"rate limit", text("Rate limit exceeded"), nil, preflight.OutcomeTransientFailure},
		{"timeout", text("request timed out"), nil, preflight.OutcomeTransientFailure},
		{"invalid params", nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}, preflight.OutcomeTerminalFailure},
		{"internal error", nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "boom"}, preflight.OutcomeTransientFailure},
		{"deadline", nil, context.DeadlineExceeded, preflight.OutcomeTransientFailure},
		{"other", nil, errors.New("broken pipe"), preflight.OutcomeTransientFailure},
	}
	for _, tt := range tests {
		if got := Classify(tt.res, tt.err); got != tt.want {
			t.Errorf("%s: Classify = %s, want %s", tt.name, got, tt.want)
		}
	}
}
