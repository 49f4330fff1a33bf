package mcpgoguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/agenttest"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestClassify(t *testing.T) {
	result := func(r *mcp.CallToolResult) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		name   string
		result []byte
		err    error
		want   preflight.Outcome
	}{
		{"text", result(mcp.NewToolResultText("ok")), nil, preflight.OutcomeSuccess},
		{"text naming a status, not an error", result(mcp.NewToolResultText("HTTP 503 explained")), nil, preflight.OutcomeSuccess},
		{"isError 503", result(mcp.NewToolResultErrorFromErr("fetch failed", agenttest.StatusError(503))), nil, preflight.OutcomeTransientFailure},
		{"isError 422", result(mcp.NewToolResultErrorFromErr("filing failed", agenttest.StatusError(422))), nil, preflight.OutcomeTerminalFailure},
		{"isError rate limit", result(mcp.NewToolResultError("rate limit exceeded")), nil, preflight.OutcomeTransientFailure},
		{"isError, no status", result(mcp.NewToolResultError("no such project")), nil, preflight.OutcomeTerminalFailure},
		{"isError, error text", result(mcp.NewToolResultError("error: disk busy")), nil, preflight.OutcomeTransientFailure},
		{"isError, content not a list", []byte(`{"isError":true,"content":"oops"}`), nil, preflight.OutcomeTerminalFailure},
		{"isError, a block without text", []byte(`{"isError":true,"content":[{"text":7},{"type":"text","text":"HTTP 503"}]}`), nil, preflight.OutcomeTransientFailure},
		{"Go error with status", nil, agenttest.StatusError(404), preflight.OutcomeTerminalFailure},
		{"JSON-RPC error naming 422", nil, fmt.Errorf("%w: HTTP 422 Unprocessable Entity", mcp.ErrInternalError), preflight.OutcomeTerminalFailure},
		{"JSON-RPC error naming 503", nil, fmt.Errorf("%w: HTTP 503 Service Unavailable", mcp.ErrInternalError), preflight.OutcomeTransientFailure},
		{"invalid params", nil, fmt.Errorf("%w: missing title", mcp.ErrInvalidParams), preflight.OutcomeTerminalFailure},
		{"cancelled", nil, context.Canceled, preflight.OutcomeTransientFailure},
		{"other error", nil, errors.New("connection reset"), preflight.OutcomeTransientFailure},
	} {
		if got := mcpgoguard.Classify("t", c.result, c.err); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
