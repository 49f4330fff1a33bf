package preflight

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Error reports that a request could not be evaluated at all: the JSON is
// malformed, an input rule or limit is broken, or the schema uses something
// outside the supported subset. It is the only error type the package
// returns; use errors.As to inspect it.
//
// Error marshals to the service's error envelope:
//
//	{"error":{"code":"invalid_request","message":"...","details":[...]}}
type Error struct {
	// Code is stable and machine-readable (see the ErrorCode constants).
	Code ErrorCode
	// Message summarizes the problem for a person.
	Message string
	// Details lists every problem found, each with a JSON Pointer. It may
	// be empty.
	Details []Issue
}

// Error returns the code and message, and the first detail if there is one.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	b.WriteString(": ")
	b.WriteString(e.Message)
	if len(e.Details) > 0 {
		d := e.Details[0]
		b.WriteString(" (")
		if d.Path != "" {
			b.WriteString(d.Path)
			b.WriteString(": ")
		}
		b.WriteString(d.Message)
		if n := len(e.Details) - 1; n > 0 {
			b.WriteString("; and more")
		}
		b.WriteString(")")
	}
	return b.String()
}

// MarshalJSON writes the error envelope. Details is omitted when empty.
func (e *Error) MarshalJSON() ([]byte, error) {
	type body struct {
		Code    ErrorCode `json:"code"`
		Message string    `json:"message"`
		Details []Issue   `json:"details,omitempty"`
	}
	return json.Marshal(struct {
		Error body `json:"error"`
	}{body{e.Code, e.Message, e.Details}})
}

// errorPriority lists the error codes in the order one is chosen for an
// Error whose details are of several kinds. It is the package's only
// error-code priority: every *Error built from issues goes through
// issuesError.
var errorPriority = []struct {
	code  ErrorCode
	kinds []IssueCode
	msg   string
}{
	{ErrorLimitExceeded, []IssueCode{IssueMaxDepth, IssueMaxNodes, IssueMaxWork, IssueMaxHistory}, "the request exceeds a limit"},
	{ErrorSchemaTooLarge, []IssueCode{IssueSchemaTooLarge}, "the schema is larger than 32768 bytes"},
	{ErrorUnsupportedSchemaKeyword, []IssueCode{IssueUnsupportedSchemaKeyword}, "the schema uses a keyword outside the supported subset"},
	{ErrorUnsupportedPattern, []IssueCode{IssueUnsupportedPattern}, "the schema has a pattern that is not an ECMA-262 regular expression (JavaScript, u flag) this validator can run"},
	{ErrorInvalidSchema, []IssueCode{IssueInvalidSchema}, "the schema is not well formed"},
}

func issuesError(issues []Issue) *Error {
	for _, p := range errorPriority {
		for _, is := range issues {
			for _, k := range p.kinds {
				if is.Code == k {
					return &Error{Code: p.code, Message: p.msg, Details: issues}
				}
			}
		}
	}
	msg := "the request breaks an input rule"
	if len(issues) > 1 {
		msg = "the request breaks " + strconv.Itoa(len(issues)) + " input rules"
	}
	return &Error{Code: ErrorInvalidRequest, Message: msg, Details: issues}
}
