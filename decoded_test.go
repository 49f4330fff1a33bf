package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodedRequestOwnsItsBytes: a caller that reuses its read buffer after
// decoding must not change the decoded request or its answer.
func TestDecodedRequestOwnsItsBytes(t *testing.T) {
	data := []byte(`{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search",
		"request":{"query":"go"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`)
	req, err := DecodeToolCallRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := Decide(req)
	copy(data, bytes.Repeat([]byte("x"), len(data)))
	after, err := Decide(req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" || req.Tool.Provider != "search" {
		t.Errorf("overwriting the input buffer changed the request (provider %q) or its decision (-before +after):\n%s", req.Tool.Provider, diff)
	}

	check := []byte(`{"request":{"method":"POST","url":"https://a.example/","body":{"n":1}},"schema":{"type":"object"}}`)
	creq, err := DecodeCheckRequest(check)
	if err != nil {
		t.Fatal(err)
	}
	cbefore, _ := Check(creq)
	copy(check, bytes.Repeat([]byte(" "), len(check)))
	cafter, err := Check(creq)
	if err != nil || cbefore.RequestHash != cafter.RequestHash {
		t.Errorf("overwriting the input buffer changed the check: %v, hash %s -> %s", err, cbefore.RequestHash, cafter.RequestHash)
	}
}

// TestEditedDecodedRequestIsCheckedAgain: a decoded request edited in
// place is put through every input rule again.
func TestEditedDecodedRequestIsCheckedAgain(t *testing.T) {
	wantCode := func(t *testing.T, err error, code IssueCode, path string) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || len(e.Details) == 0 || e.Details[0].Code != code || e.Details[0].Path != path {
			t.Errorf("got %v, want an error with detail %s at %s", err, code, path)
		}
	}
	creq, err := DecodeCheckRequest([]byte(`{"request":{"method":"POST","url":"https://a.example/","body":1},"schema":{},
		"economics":{"downstreamCostUsd":1,"billsOnInvalidRequest":true,"retryCostUsd":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	creq.Economics.RetryCostUSD = "-7"
	_, err = Check(creq)
	wantCode(t, err, IssueMinimum, "/economics/retryCostUsd")

	treq, err := DecodeToolCallRequest([]byte(`{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search",
		"request":{"query":"go"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1,"maxToolCallsRemaining":3},
		"history":[{"toolCallId":"c","fingerprint":"f","outcome":"success","ageSeconds":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	treq.History[0].Outcome = "bogus"
	_, err = Decide(treq)
	wantCode(t, err, IssueEnum, "/history/0/outcome")

	treq.History[0].Outcome = Success
	treq.Budget.MaxToolCallsRemaining = "-3"
	_, err = Decide(treq)
	wantCode(t, err, IssueMinimum, "/budget/maxToolCallsRemaining")
}

// TestEditedCheckRequestMatchesFreshDecode: whatever is edited in a decoded
// CheckRequest, Check answers as it would for the edited request sent anew.
func TestEditedCheckRequestMatchesFreshDecode(t *testing.T) {
	const doc = `{"request":{"method":"POST","url":"https://a.example/","headers":{"Accept":"text/plain","X-Trace":"1"},
		"query":{"q":1},"body":{"n":1}},"schema":{"properties":{"n":{"maximum":5}}},
		"economics":{"downstreamCostUsd":1,"billsOnInvalidRequest":true,"retryCostUsd":0}}`
	edits := []struct {
		name string
		edit func(r *CheckRequest)
	}{
		{"header value", func(r *CheckRequest) { r.Request.Headers["Accept"] = "application/json" }},
		{"header added", func(r *CheckRequest) { r.Request.Headers["Authorization"] = "Bearer x" }},
		{"header removed", func(r *CheckRequest) { delete(r.Request.Headers, "X-Trace") }},
		{"header renamed", func(r *CheckRequest) {
			delete(r.Request.Headers, "X-Trace")
			r.Request.Headers["X-Other"] = "1"
		}},
		{"headers dropped", func(r *CheckRequest) { r.Request.Headers = nil }},
		{"method", func(r *CheckRequest) { r.Request.Method = "GET" }},
		{"url", func(r *CheckRequest) { r.Request.URL = "https://b.example/" }},
		{"query", func(r *CheckRequest) { r.Request.Query = json.RawMessage(`{"q":2}`) }},
		{"body", func(r *CheckRequest) { r.Request.Body = json.RawMessage(`{"n":9}`) }},
		{"body removed", func(r *CheckRequest) { r.Request.Body = nil }},
		{"schema", func(r *CheckRequest) { r.Schema = json.RawMessage(`{"properties":{"n":{"maximum":0}}}`) }},
		{"economics value", func(r *CheckRequest) { r.Economics.DownstreamCostUSD = "3" }},
		{"economics removed", func(r *CheckRequest) { r.Economics = nil }},
	}
	for _, tt := range edits {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeCheckRequest([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			before, err := Check(req)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(req)
			got, err := Check(req)
			if err != nil {
				t.Fatal(err)
			}
			sent, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := DecodeCheckRequest(sent)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Check(fresh)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("edited request (-fresh decode +edited):\n%s", diff)
			}
			if cmp.Equal(before, got) {
				t.Errorf("the edit changed nothing in the result; the case tests nothing")
			}
		})
	}
}

// TestGoBuiltRequestNumbers: encoding/json would write an empty json.Number
// as 0, so a Go-built request with a required number left empty, or with
// text that is not a number, gets the error a JSON caller would.
func TestGoBuiltRequestNumbers(t *testing.T) {
	req := baseCall()
	req.Tool.EstimatedExternalCostUSD = ""
	req.Budget.ReservedUSD = "abc"
	_, err := Decide(req)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want *Error", err)
	}
	want := []Issue{
		{Path: "/tool/estimatedExternalCostUsd", Code: IssueRequired, Message: "missing required number (the json.Number is empty)"},
		{Path: "/budget/reservedUsd", Code: IssueType, Message: `expected a number, found "abc"`},
	}
	if diff := cmp.Diff(want, e.Details); diff != "" || e.Code != CodeInvalidRequest {
		t.Errorf("code %s, details (-want +got):\n%s", e.Code, diff)
	}
	_, err = Check(&CheckRequest{Request: ProposedRequest{Method: "POST", URL: "https://a.example/"},
		Schema: []byte(`{}`), Economics: &CheckEconomics{RetryCostUSD: "0"}})
	if !errors.As(err, &e) || len(e.Details) != 1 || e.Details[0].Path != "/economics/downstreamCostUsd" {
		t.Errorf("missing downstreamCostUsd: got %v", err)
	}
}
