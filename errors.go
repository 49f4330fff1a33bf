package preflight

import (
	"encoding/json"
	"slices"
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

// clone returns a copy of e that shares nothing the caller could change
// with e.
func (e *Error) clone() *Error {
	c := *e
	c.Details = slices.Clone(e.Details)
	return &c
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

// ErrorCode is the code of an [Error].
type ErrorCode string

// The error codes of the decoders, Check and Decide. The reference server
// answers each with HTTP 400 and adds codes of its own (package server).
const (
	CodeInvalidJSON              ErrorCode = "invalid_json"               // not JSON: empty, trailing data, invalid UTF-8, duplicate keys
	CodeInvalidRequest           ErrorCode = "invalid_request"            // JSON, but an input rule is broken
	CodeLimitExceeded            ErrorCode = "limit_exceeded"             // too deep, too many nodes or history entries
	CodeUnsupportedSchemaKeyword ErrorCode = "unsupported_schema_keyword" // a keyword outside the subset
	CodeUnsupportedPattern       ErrorCode = "unsupported_pattern"        // a pattern that is not ECMA-262 (u flag), is not regular, or is too large
	CodeInvalidSchema            ErrorCode = "invalid_schema"             // a keyword with an ill-formed value
	CodeSchemaTooLarge           ErrorCode = "schema_too_large"           // schema over 32,768 bytes
)

// IssueCode is the code of an [Issue].
type IssueCode string

// Issue codes of schema validation: the failing keyword.
const (
	IssueType                 IssueCode = "type"
	IssueRequired             IssueCode = "required"
	IssueEnum                 IssueCode = "enum"
	IssueConst                IssueCode = "const"
	IssueMinimum              IssueCode = "minimum"
	IssueMaximum              IssueCode = "maximum"
	IssueMinLength            IssueCode = "minLength"
	IssueMaxLength            IssueCode = "maxLength"
	IssuePattern              IssueCode = "pattern"
	IssueAdditionalProperties IssueCode = "additionalProperties"
	IssueFalseSchema          IssueCode = "false_schema" // a boolean false subschema rejects the value
	IssueAbsoluteURL          IssueCode = "absolute_url" // a browse url that is not absolute http(s) with a host
)

// Issue codes of check warnings.
const (
	IssueSensitiveHeader    IssueCode = "sensitive_header"    // a credential-bearing header was sent to the service
	IssueBodyWithGet        IssueCode = "body_with_get"       // GET or HEAD carrying a body
	IssueBodyAbsent         IssueCode = "body_absent"         // no body, and the schema does not require one
	IssueErrorsTruncated    IssueCode = "errors_truncated"    // more than 100 errors; the rest are not listed
	IssueBudgetInsufficient IssueCode = "budget_insufficient" // downstream cost exceeds the remaining budget
)

// Issue codes of decisions.
const (
	IssueUnknownFieldIgnored IssueCode = "unknown_field_ignored" // an unknown top-level member of a tool-call request
)

// Issue codes in the Details of an [Error].
const (
	IssueInvalidJSON              IssueCode = "invalid_json"     // a syntax error at this point
	IssueDuplicateKey             IssueCode = "duplicate_key"    // an object member name appears twice
	IssueInvalidUTF8              IssueCode = "invalid_utf8"     // a string is not valid UTF-8
	IssueUnknownField             IssueCode = "unknown_field"    // a member this object does not allow
	IssueInteger                  IssueCode = "integer"          // a number with a fractional part where an integer is needed
	IssueInvalidURL               IssueCode = "invalid_url"      // not an absolute http(s) URL with a host
	IssueInvalidMethod            IssueCode = "invalid_method"   // not an HTTP method token
	IssueDuplicateHeader          IssueCode = "duplicate_header" // two header names that differ only in case
	IssuePrecision                IssueCode = "precision"        // a money value with more than 400 digits after the point
	IssueMaxDepth                 IssueCode = "max_depth"        // nesting deeper than the limit
	IssueMaxNodes                 IssueCode = "max_nodes"        // more values than the limit
	IssueMaxWork                  IssueCode = "max_work"         // validation needs more steps than the limit (see Check)
	IssueMaxHistory               IssueCode = "max_history"      // more than 100 history entries
	IssueSchemaTooLarge           IssueCode = "schema_too_large" // schema over 32,768 bytes
	IssueUnsupportedSchemaKeyword IssueCode = "unsupported_schema_keyword"
	IssueUnsupportedPattern       IssueCode = "unsupported_pattern"
	IssueInvalidSchema            IssueCode = "invalid_schema"
)
