package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpToolNames are the tools the server has, in tools/list order.
var mcpToolNames = []string{mcpToolCheckRequest, mcpToolToolCall}

// mcpUnknownToolMiddleware answers tools/call of a tool that does not exist
// with the same JSON-RPC error the SDK sends (-32602, invalid params), but
// with a message that lists the tools that do exist and, for a near miss such
// as check-request, names the one meant.
func mcpUnknownToolMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && call.Params != nil {
			if msg := mcpUnknownToolMessage(call.Params.Name); msg != "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
			}
		}
		return next(ctx, method, req)
	}
}

// mcpUnknownToolMessage returns "" for a tool that exists, and otherwise the
// error message for name.
func mcpUnknownToolMessage(name string) string {
	for _, t := range mcpToolNames {
		if name == t {
			return ""
		}
	}
	tools := strings.Join(quoteAll(mcpToolNames), " and ") + " (see tools/list)"
	if meant := mcpToolMeant(name); meant != "" {
		return fmt.Sprintf("unknown tool %q: did you mean %q? The tools are %s", name, meant, tools)
	}
	return fmt.Sprintf("unknown tool %q: the tools are %s", name, tools)
}

// mcpToolMeant returns the tool whose name equals name once case and the
// separators - . and space are ignored (check-request, CheckRequest,
// preflight.tool.call), or "".
func mcpToolMeant(name string) string {
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch r {
			case '_', '-', '.', ' ':
				return -1
			}
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, s)
	}
	for _, t := range mcpToolNames {
		if fold(name) == fold(t) {
			return t
		}
	}
	return ""
}

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return q
}
