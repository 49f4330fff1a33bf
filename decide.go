package preflight

import "github.com/agentpreflight/preflight/internal/jsonv"

type parsedToolCall struct {
	payload *jsonv.Value
}

// DecodeToolCallRequest parses the body of POST /v0.2/preflight/tool-call.
func DecodeToolCallRequest(data []byte) (*ToolCallRequest, error) {
	return nil, &Error{Code: CodeInvalidRequest, Message: "not implemented"}
}

// Decide returns the decision for req.
func Decide(req *ToolCallRequest) (*ToolCallDecision, error) {
	return nil, &Error{Code: CodeInvalidRequest, Message: "not implemented"}
}
