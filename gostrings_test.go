package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wireMark stands for the bad string when a test case builds the same
// request as bytes: it is encoded, then replaced by the raw bytes.
const wireMark = "@@bad@@"

// TestGoBuiltInvalidUTF8: encoding/json writes bytes that are not UTF-8
// as U+FFFD; Decide and Check never repair a Go string that way. It is
// refused with the error the same bytes sent as JSON get: the parser's,
// for the first bad string in document order.
func TestGoBuiltInvalidUTF8(t *testing.T) {
	const bad = "sea\xffrch"
	quoted := utf8Message
	tests := []struct {
		name string
		edit func(r *ToolCallRequest, s string)
		want []Issue
	}{
		{"runId", func(r *ToolCallRequest, s string) { r.RunID = s },
			[]Issue{{Path: "/runId", Code: IssueInvalidUTF8, Message: quoted}}},
		{"stepId", func(r *ToolCallRequest, s string) { r.StepID = s },
			[]Issue{{Path: "/stepId", Code: IssueInvalidUTF8, Message: quoted}}},
		{"provider", func(r *ToolCallRequest, s string) { r.Tool.Provider = s },
			[]Issue{{Path: "/tool/provider", Code: IssueInvalidUTF8, Message: quoted}}},
		{"operation", func(r *ToolCallRequest, s string) { r.Tool.Operation = s },
			[]Issue{{Path: "/tool/operation", Code: IssueInvalidUTF8, Message: quoted}}},
		{"goal hash", func(r *ToolCallRequest, s string) { r.Task = &Task{GoalHash: s} },
			[]Issue{{Path: "/task/goalHash", Code: IssueInvalidUTF8, Message: quoted}}},
		{"every history string", func(r *ToolCallRequest, s string) {
			ok := HistoryEntry{ToolCallID: "c0", Fingerprint: "f", Outcome: OutcomeSuccess, AgeSeconds: "1"}
			r.History = []HistoryEntry{ok, {ToolCallID: s, Fingerprint: s, Outcome: Outcome(s), ResultReference: s, AgeSeconds: "1", GoalHash: s}}
		}, []Issue{ // the parser stops at the first
			{Path: "/history/1/toolCallId", Code: IssueInvalidUTF8, Message: quoted},
		}},
		{"a string in the payload (left to the parser)", func(r *ToolCallRequest, s string) {
			r.Tool.Request = json.RawMessage(`{"query":"` + s + `"}`)
		}, []Issue{{Path: "/tool/request/query", Code: IssueInvalidUTF8, Message: quoted}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := baseCall()
			tc.edit(req, bad)
			d, err := Decide(req)
			assertInvalidUTF8(t, d, err, tc.want)

			// Over the wire the same bytes get the same code and pointer.
			wire := baseCall()
			tc.edit(wire, wireMark)
			_, werr := DecideJSON(wireBytes(t, wire, bad))
			assertSameAsWire(t, err, werr)
		})
	}
}

func TestGoBuiltCheckInvalidUTF8(t *testing.T) {
	const bad = "X-\xff"
	quoted := utf8Message
	tests := []struct {
		name string
		edit func(r *CheckRequest, s string)
		want []Issue
	}{
		{"method", func(r *CheckRequest, s string) { r.Request.Method = s },
			[]Issue{{Path: "/request/method", Code: IssueInvalidUTF8, Message: quoted}}},
		{"url", func(r *CheckRequest, s string) { r.Request.URL = "https://a.example/" + s },
			[]Issue{{Path: "/request/url", Code: IssueInvalidUTF8, Message: quoted}}},
		{"header value", func(r *CheckRequest, s string) { r.Request.Headers = map[string]string{"Accept": "*/*", "X-A/b~": s} },
			[]Issue{{Path: "/request/headers/X-A~1b~0", Code: IssueInvalidUTF8, Message: quoted}}},
		{"header name", func(r *CheckRequest, s string) { r.Request.Headers = map[string]string{"Accept": "*/*", s: "v"} },
			[]Issue{{Path: "/request/headers", Code: IssueInvalidUTF8, Message: quoted}}},
		{"header names in order", func(r *CheckRequest, s string) {
			r.Request.Headers = map[string]string{"B": s, "A": s, "C": "ok"}
		}, []Issue{ // the first in the order encoding/json writes them
			{Path: "/request/headers/A", Code: IssueInvalidUTF8, Message: quoted},
		}},
		{"a string in the body (left to the parser)", func(r *CheckRequest, s string) { r.Request.Body = json.RawMessage(`"` + s + `"`) },
			[]Issue{{Path: "/request/body", Code: IssueInvalidUTF8, Message: quoted}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := func() *CheckRequest {
				return &CheckRequest{Request: ProposedRequest{Method: "POST", URL: "https://a.example/"}, Schema: json.RawMessage(`{}`)}
			}
			req := base()
			tc.edit(req, bad)
			res, err := Check(req)
			assertInvalidUTF8(t, res, err, tc.want)

			wire := base()
			tc.edit(wire, wireMark)
			_, werr := CheckJSON(wireBytes(t, wire, bad))
			assertSameAsWire(t, err, werr)
		})
	}
}

// TestEditedToInvalidUTF8: a decoded request edited to hold a string that
// is not UTF-8 is refused like a Go-built one.
func TestEditedToInvalidUTF8(t *testing.T) {
	req, err := DecodeToolCallRequest([]byte(`{"runId":"r","stepId":"s","tool":{"provider":"search",
		"operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Tool.Provider = "sea\xffrch"
	d, err := Decide(req)
	assertInvalidUTF8(t, d, err, []Issue{{Path: "/tool/provider", Code: IssueInvalidUTF8, Message: utf8Message}})
}

func assertInvalidUTF8[R any](t *testing.T, res *R, err error, want []Issue) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got result %+v and error %v, want an *Error", res, err)
	}
	if e.Code != ErrorInvalidJSON {
		t.Errorf("code %q, want %q", e.Code, ErrorInvalidJSON)
	}
	if diff := cmp.Diff(want, e.Details); diff != "" {
		t.Errorf("details (-want +got):\n%s", diff)
	}
}

// wireBytes encodes req, holding wireMark, and puts bad in its place: the
// bytes an HTTP caller would send.
func wireBytes(t *testing.T, req any, bad string) []byte {
	t.Helper()
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(data, []byte(wireMark), []byte(bad))
}

// assertSameAsWire checks that the Go-built request's error is the error
// of the same request sent as bytes.
func assertSameAsWire(t *testing.T, goErr, wireErr error) {
	t.Helper()
	if diff := cmp.Diff(wireErr, goErr); diff != "" {
		t.Errorf("Go-built and wire errors differ (-wire +Go-built):\n%s", diff)
	}
}
