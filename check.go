package preflight

import "github.com/agentpreflight/preflight/internal/jsonv"

// parsedCheck is the parsed form of a decoded CheckRequest.
type parsedCheck struct {
	body, schema, query *jsonv.Value
}

// DecodeCheckRequest parses the body of POST /check-request.
func DecodeCheckRequest(data []byte) (*CheckRequest, error) {
	return nil, &Error{Code: CodeInvalidRequest, Message: "not implemented"}
}

// Check validates req.Request.Body against req.Schema.
func Check(req *CheckRequest) (*CheckResult, error) {
	return nil, &Error{Code: CodeInvalidRequest, Message: "not implemented"}
}
