package preflight

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/strictjson"
)

// A Go string may hold any bytes; a JSON string may not. encoding/json
// writes each byte that is not UTF-8 as U+FFFD, so a request built in Go
// with such a string would, once encoded for the decoder, be checked or
// decided on text the caller never wrote. The functions here refuse it
// instead, with the error a caller sending the same bytes over HTTP gets
// (invalid_json, issue invalid_utf8) and the pointer of the field. Only a
// request built in Go or changed after decoding is looked at: the parser
// has already refused invalid UTF-8 in a decoded one.

// invalidUTF8 is the error for the issues the checks below found, or nil.
func (d *decoder) invalidUTF8() *Error {
	if len(d.issues) == 0 {
		return nil
	}
	return &Error{Code: ErrorInvalidJSON, Message: "the request cannot be encoded as JSON: invalid UTF-8", Details: d.issues}
}

// text reports s at path when it is not valid UTF-8.
func (d *decoder) text(at memberPath, s string) {
	if !utf8.ValidString(s) {
		d.add(at.String(), IssueInvalidUTF8, "expected a string of valid UTF-8, found "+strconv.Quote(clip.String(s)))
	}
}

// checkRequestUTF8 checks every string of a Go-built CheckRequest. Its raw
// JSON texts (Query, Body, Schema) are left to the parser, which reports
// invalid UTF-8 in them with the same code.
func checkRequestUTF8(req *CheckRequest) *Error {
	var d decoder
	r := &req.Request
	d.text(memberPath{"/request", "method"}, r.Method)
	d.text(memberPath{"/request", "url"}, r.URL)
	var bad []string // header names with a problem, sorted below as encoding/json sorts them
	for name, value := range r.Headers {
		if !utf8.ValidString(name) || !utf8.ValidString(value) {
			bad = append(bad, name)
		}
	}
	slices.Sort(bad)
	for _, name := range bad {
		if !utf8.ValidString(name) {
			// A pointer cannot name a member whose name is not UTF-8; the
			// parser points at the object holding it, and so does this.
			d.add("/request/headers", IssueInvalidUTF8, "expected header names of valid UTF-8, found "+strconv.Quote(clip.String(name)))
			continue
		}
		d.text(memberPath{"/request/headers", strictjson.EscapePointerToken(name)}, r.Headers[name])
	}
	return d.invalidUTF8()
}

// toolCallUTF8 checks every string of a Go-built ToolCallRequest. Its raw
// JSON payload (Tool.Request) is left to the parser, which reports invalid
// UTF-8 in it with the same code.
func toolCallUTF8(req *ToolCallRequest) *Error {
	var d decoder
	d.text(memberPath{"", "runId"}, req.RunID)
	d.text(memberPath{"", "stepId"}, req.StepID)
	d.text(memberPath{"/tool", "provider"}, req.Tool.Provider)
	d.text(memberPath{"/tool", "operation"}, req.Tool.Operation)
	if req.Task != nil {
		d.text(memberPath{"/task", "goalHash"}, req.Task.GoalHash)
	}
	for i := range req.History {
		h := &req.History[i]
		if utf8.ValidString(h.ToolCallID) && utf8.ValidString(h.Fingerprint) && utf8.ValidString(string(h.Outcome)) &&
			utf8.ValidString(h.ResultReference) && utf8.ValidString(h.GoalHash) {
			continue // the common case builds no path
		}
		path := "/history/" + strconv.Itoa(i)
		d.text(memberPath{path, "toolCallId"}, h.ToolCallID)
		d.text(memberPath{path, "fingerprint"}, h.Fingerprint)
		d.text(memberPath{path, "outcome"}, string(h.Outcome))
		d.text(memberPath{path, "resultReference"}, h.ResultReference)
		d.text(memberPath{path, "goalHash"}, h.GoalHash)
	}
	return d.invalidUTF8()
}
