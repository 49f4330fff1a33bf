package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

	treq.History[0].Outcome = OutcomeSuccess
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
	if diff := cmp.Diff(want, e.Details); diff != "" || e.Code != ErrorInvalidRequest {
		t.Errorf("code %s, details (-want +got):\n%s", e.Code, diff)
	}
	_, err = Check(&CheckRequest{Request: ProposedRequest{Method: "POST", URL: "https://a.example/"},
		Schema: []byte(`{}`), Economics: &CheckEconomics{RetryCostUSD: "0"}})
	if !errors.As(err, &e) || len(e.Details) != 1 || e.Details[0].Path != "/economics/downstreamCostUsd" {
		t.Errorf("missing downstreamCostUsd: got %v", err)
	}
}

// TestInPlaceEditOfToolRequest is the reproduction from issue 14: bytes
// written into a decoded Tool.Request in place used to reach the parsed
// tree unnoticed, so Decide answered for a payload the request no longer
// held, with a fingerprint no fresh decode gives.
func TestInPlaceEditOfToolRequest(t *testing.T) {
	req, err := DecodeToolCallRequest([]byte(`{"runId":"r","stepId":"s","tool":{"provider":"search",
		"operation":"web_search","request":{"query":"abc"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	copy(req.Tool.Request, []byte(`{"query": 7   }`))
	inPlace, err := Decide(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Tool.Request = append([]byte(nil), req.Tool.Request...)
	copied, err := Decide(req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(copied, inPlace); diff != "" {
		t.Errorf("in-place edit (-edited copy +edited in place):\n%s", diff)
	}
	if inPlace.Verdict != VerdictBlock {
		t.Errorf("verdict %s, want block: the edited query is not a string", inPlace.Verdict)
	}
}

// TestInPlaceEditsOfByteFields edits every exported byte field of a decoded
// request in place (same length, so that only the content changes) and
// appends to it, and wants the answer a fresh decode of the edited request
// gives.
func TestInPlaceEditsOfByteFields(t *testing.T) {
	const checkDoc = `{"request":{"method":"POST","url":"https://a.example/","query":{"q":1},"body":{"n":1}},
		"schema":{"properties":{"n":{"maximum":5}}}}`
	checkEdits := []struct {
		name string
		edit func(r *CheckRequest)
	}{
		{"body in place", func(r *CheckRequest) { copy(r.Request.Body, `{"n":9}`) }},
		{"query in place", func(r *CheckRequest) { copy(r.Request.Query, `{"q":2}`) }},
		{"schema in place", func(r *CheckRequest) { copy(r.Schema, `{"properties":{"n":{"maximum":0}}}`) }},
		{"body appended", func(r *CheckRequest) {
			r.Request.Body = append(r.Request.Body[:len(r.Request.Body)-1], `,"m":2}`...)
		}},
		{"query appended", func(r *CheckRequest) {
			r.Request.Query = append(r.Request.Query[:len(r.Request.Query)-1], `,"r":2}`...)
		}},
	}
	for _, tt := range checkEdits {
		t.Run("check/"+tt.name, func(t *testing.T) {
			req, err := DecodeCheckRequest([]byte(checkDoc))
			if err != nil {
				t.Fatal(err)
			}
			before, err := Check(req)
			if err != nil {
				t.Fatal(err)
			}
			body, query, schema := string(req.Request.Body), string(req.Request.Query), string(req.Schema)
			tt.edit(req)
			if string(req.Request.Body) == body && string(req.Request.Query) == query && string(req.Schema) == schema {
				t.Fatal("the edit changed no byte field; the case tests nothing")
			}
			got, err := Check(req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fresh(t, req, checkBytes), got); diff != "" {
				t.Errorf("edited request (-fresh decode +edited):\n%s", diff)
			}
			if cmp.Equal(before, got) {
				t.Error("the edit changed nothing in the result")
			}
		})
	}

	const toolDoc = `{"runId":"r","stepId":"s","tool":{"provider":"browse","operation":"fetch",
		"request":{"url":"https://a.example/x"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`
	toolEdits := []struct {
		name string
		edit func(r *ToolCallRequest)
	}{
		{"request in place", func(r *ToolCallRequest) { copy(r.Tool.Request, `{"url":"https://b.example/x"}`) }},
		{"request broken in place", func(r *ToolCallRequest) {
			copy(r.Tool.Request, `{"url":7}`+strings.Repeat(" ", len(r.Tool.Request)-len(`{"url":7}`)))
		}},
		{"request appended", func(r *ToolCallRequest) {
			r.Tool.Request = append(r.Tool.Request[:len(r.Tool.Request)-1], `,"x":1}`...)
		}},
	}
	for _, tt := range toolEdits {
		t.Run("decide/"+tt.name, func(t *testing.T) {
			req, err := DecodeToolCallRequest([]byte(toolDoc))
			if err != nil {
				t.Fatal(err)
			}
			before, err := Decide(req)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(req)
			got, err := Decide(req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fresh(t, req, decideBytes), got); diff != "" {
				t.Errorf("edited request (-fresh decode +edited):\n%s", diff)
			}
			if cmp.Equal(before, got) {
				t.Error("the edit changed nothing in the decision")
			}
		})
	}
}

// TestByteFieldsDoNotShareMemory: appending to one exported byte field
// never overwrites another.
func TestByteFieldsDoNotShareMemory(t *testing.T) {
	req, err := DecodeCheckRequest([]byte(`{"request":{"method":"POST","url":"https://a.example/","query":{"q":1},"body":{"n":1}},"schema":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, schema := string(req.Request.Body), string(req.Schema)
	_ = append(req.Request.Query, "xxxxxxxxxxxxxxxx"...)
	_ = append(req.Request.Body, "xxxxxxxxxxxxxxxx"...)
	if string(req.Request.Body) != body || string(req.Schema) != schema {
		t.Errorf("an append overwrote a neighbour: body %s, schema %s", req.Request.Body, req.Schema)
	}
}

// fresh is the answer to req sent anew as bytes: encoded, then put
// through answer (checkBytes or decideBytes).
func fresh[R any](t *testing.T, req any, answer func([]byte) (R, error)) R {
	t.Helper()
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	res, err := answer(data)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// FuzzInPlaceEdit decodes a request, overwrites bytes of one of its
// exported byte fields in place, and wants Check or Decide to answer
// exactly as they do for a fresh decode of the edited request's bytes (or
// to fail when the edit left text that is not JSON).
func FuzzInPlaceEdit(f *testing.F) {
	for _, pattern := range []string{"testdata/check/*.json", "testdata/decide/*.json"} {
		files, _ := filepath.Glob(pattern)
		for i, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, uint8(i), uint16(i*7), []byte(`"x"`))
			f.Add(data, uint8(i+1), uint16(1), []byte(`7`))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, field uint8, at uint16, patch []byte) {
		// edit overwrites b in place and reports whether that changed it.
		edit := func(b []byte) bool {
			if len(b) == 0 {
				return false
			}
			before := string(b)
			copy(b[int(at)%len(b):], patch)
			return string(b) != before
		}
		if req, err := DecodeCheckRequest(data); err == nil {
			changed := edit([][]byte{req.Request.Body, req.Request.Query, req.Schema}[field%3])
			got, gotErr := Check(req)
			sameAnswer(t, data, req, changed, got, gotErr, checkBytes)
		}
		if req, err := DecodeToolCallRequest(data); err == nil {
			changed := edit(req.Tool.Request)
			got, gotErr := Decide(req)
			sameAnswer(t, data, req, changed, got, gotErr, decideBytes)
		}
	})
}

// sameAnswer fails t unless got and gotErr, the answer to req decoded from
// data and then edited, are what answer gives for the bytes a caller
// holding req would send: req encoded, or data itself when the edit
// changed nothing (encoding drops the unknown members a decision lists as
// ignored). When req cannot be encoded, the answer must be an error.
func sameAnswer[R any](t *testing.T, data []byte, req any, changed bool, got R, gotErr error, answer func([]byte) (R, error)) {
	t.Helper()
	doc := data
	if changed {
		var err error
		if doc, err = json.Marshal(req); err != nil {
			if gotErr == nil {
				t.Fatalf("edited request does not encode (%v), but got an answer: %+v", err, got)
			}
			return
		}
	}
	want, wantErr := answer(doc)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("errors differ: edited %v, fresh %v", gotErr, wantErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("edited request (-fresh decode +edited):\n%s", diff)
	}
}

// TestRepeatedChecksShareNothing: DecodeCheckRequest works the outcome out
// once, and every Check of the request hands out its own copy, so that a
// caller editing one result (or its error) does not change the next, and
// goroutines may check one request at once.
func TestRepeatedChecksShareNothing(t *testing.T) {
	data := []byte(`{"request":{"method":"GET","url":"https://a.example/","headers":{"Authorization":"x"},"body":{"n":"one","m":2}},
		"schema":{"type":"object","properties":{"n":{"type":"integer"},"m":{"type":"string"}}},
		"economics":{"downstreamCostUsd":0.5,"billsOnInvalidRequest":true,"retryCostUsd":0.1}}`)
	req, err := DecodeCheckRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Check(req)
	if err != nil || len(want.Errors) != 2 || len(want.Warnings) < 2 || want.Economics == nil {
		t.Fatalf("Check = %+v, %v; want two errors, the header and GET warnings and economics", want, err)
	}
	pristine := *want
	pristine.Errors, pristine.Warnings = append([]Issue(nil), want.Errors...), append([]Issue(nil), want.Warnings...)
	econ := *want.Economics
	pristine.Economics = &econ

	want.Errors[0].Message = "edited"
	want.Errors = append(want.Errors, Issue{Code: "x"})
	want.Warnings[0].Path = "/edited"
	want.Economics.Advice = "edited"
	want.RequestHash = "edited"

	done := make(chan *CheckResult, 4)
	for range cap(done) {
		go func() {
			res, err := Check(req)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
	}
	for range cap(done) {
		if diff := cmp.Diff(&pristine, <-done); diff != "" {
			t.Errorf("a later Check saw the edits to an earlier result (-want +got):\n%s", diff)
		}
	}

	// An error from a check that could not finish is copied as well.
	long := []byte(worstCases()[0].data) // the issue's pattern, beyond the work ceiling
	lreq, err := DecodeCheckRequest(long)
	if err != nil {
		t.Fatal(err)
	}
	_, first := Check(lreq)
	var e *Error
	if !errors.As(first, &e) || e.Code != ErrorLimitExceeded || len(e.Details) != 1 {
		t.Fatalf("Check of a pattern beyond the work ceiling = %v; want limit_exceeded with one detail", first)
	}
	e.Details[0].Path, e.Message = "/edited", "edited"
	_, second := Check(lreq)
	if errors.As(second, &e); e.Message == "edited" || e.Details[0].Path == "/edited" {
		t.Errorf("a later Check saw the edits to an earlier error: %v", second)
	}
}

// TestConcurrentChecksReuseTapes: goroutines decoding at once take parse
// tapes from one pool and give them back; each must still get exactly the
// answer a lone call gets, whatever document used its tape before.
func TestConcurrentChecksReuseTapes(t *testing.T) {
	files := benchFiles(t, "check_*.json")
	type answer struct {
		Res *CheckResult
		Err string
	}
	want := map[string]answer{}
	var names []string
	for name, data := range files {
		res, err := checkBytes(data)
		want[name] = answer{res, fmt.Sprint(err)}
		names = append(names, name)
	}
	done := make(chan error, 8)
	for g := range cap(done) {
		go func() {
			for i := range 40 {
				name := names[(g*7+i)%len(names)]
				res, err := checkBytes(files[name])
				if diff := cmp.Diff(want[name], answer{res, fmt.Sprint(err)}); diff != "" {
					done <- fmt.Errorf("%s, goroutine %d, call %d (-alone +concurrent):\n%s", name, g, i, diff)
					return
				}
			}
			done <- nil
		}()
	}
	for range cap(done) {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
