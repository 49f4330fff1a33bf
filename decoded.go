package preflight

// A decoded request cannot lie. This file holds the whole mechanism that
// keeps a request from DecodeCheckRequest or DecodeToolCallRequest and the
// parsed form (or outcome) Check and Decide read from it in agreement:
//
//   - The decoder copies the caller's bytes once. The parsed tree reads that
//     private copy (through unsafe.String, without copying again), and
//     nothing hands the copy out as a []byte: every string a decoded
//     request holds is immutable, and every exported []byte field (Schema,
//     Request.Query, Request.Body, Tool.Request) is a second copy, made by
//     copyOut, that the tree never reads.
//   - Before Check or Decide uses the parsed form, sameAs compares every
//     exported field with what was decoded, by content: strings, numbers,
//     headers, history and raw JSON text alike. An in-place edit of a byte
//     field, a reassigned field or a changed map all read as a change.
//   - Any change, or a request built in Go, is encoded with encoding/json
//     and decoded afresh, so an edited request gets exactly the answer (or
//     the error) the same request sent as bytes would. What encoding would
//     hide is checked first: a string that is not UTF-8 (gostrings.go) and
//     a json.Number that is empty or not a number (numberFieldIssues).
//
// So an edit can never reach the tree, and the tree is never trusted past
// an edit. A check request keeps no tree at all: DecodeCheckRequest works
// out the outcome while the tree is there and releases its nodes to strictjson
// for the next request, and what sameAs compares are strings in the
// private copy (or, for a header with escapes, its decoded text).

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/agentpreflight/preflight/strictjson"
)

// parsedCheck is what DecodeCheckRequest keeps in a CheckRequest: the
// outcome of the check, worked out while decoding so that the parsed tree
// can be dropped (its nodes go back to strictjson for the next request), and
// what decoding stored in the request, for sameAs. Nothing in it refers to
// the tree.
type parsedCheck struct {
	outcome checkOutcome // when err is nil
	err     *Error       // a check that could not finish (max_work)
	// The raw JSON texts as decoded, in the private copy, and whether
	// each was present.
	query, body, schema rawText
	headers             []header  // the headers members; none when absent
	headerRoom          [4]header // headers' first backing array
	method, url         string
	economics           CheckEconomics
	hasEconomics        bool
}

// rawText is the text of a raw JSON member, or absent.
type rawText struct {
	text    string
	present bool
}

// header is one member of a decoded headers object.
type header struct{ name, value string }

// textOf returns the text of v, which may be absent.
func textOf(v strictjson.Value) rawText {
	if !v.IsValid() {
		return rawText{}
	}
	return rawText{v.Raw(), true}
}

// same reports whether b holds t's text, or is empty when t is absent.
func (t rawText) same(b []byte) bool {
	if !t.present {
		return len(b) == 0
	}
	return string(b) == t.text // compared in place, not converted
}

// parsedToolCall is the parsed form of a decoded ToolCallRequest.
type parsedToolCall struct {
	payload strictjson.Value
	// src holds the decoded fields, Tool.Request left nil (sameAs compares
	// it with payload).
	src ToolCallRequest
}

// copyOut sets each *dst[i] to a copy of the text of src[i], or to nil when
// src[i] is absent. The copies share one allocation, into's when it has
// the room (parseObject's spare); each has its capacity cut to its length,
// so that an append by the caller reallocates instead of overwriting the
// next one.
func copyOut(into []byte, dst []*json.RawMessage, src []strictjson.Value) {
	n := 0
	for _, v := range src {
		if v.IsValid() {
			n += v.End() - v.Start()
		}
	}
	buf := into[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	for i, v := range src {
		if !v.IsValid() {
			*dst[i] = nil
			continue
		}
		start := len(buf)
		buf = append(buf, v.Raw()...)
		*dst[i] = buf[start:len(buf):len(buf)]
	}
}

// publish gives req its exported copies of the raw texts of t and records
// what decoding stored in req, for sameAs.
func (p *parsedCheck) publish(req *CheckRequest, t *checkTree, spare []byte) {
	r := &req.Request
	copyOut(spare, []*json.RawMessage{&r.Query, &r.Body, &req.Schema}, []strictjson.Value{t.parts.query, t.parts.body, t.rawSch})
	p.query, p.body, p.schema = textOf(t.parts.query), textOf(t.parts.body), textOf(t.rawSch)
	if h := t.parts.headers; h.IsValid() && h.Len() > 0 {
		p.headers = p.headerRoom[:0]
		for it := h.Iter(); it.Next(); {
			p.headers = append(p.headers, header{it.Key(), it.Value().Str()})
		}
	}
	p.method, p.url = r.Method, r.URL
	if req.Economics != nil {
		p.economics, p.hasEconomics = *req.Economics, true
	}
}

// sameAs reports whether r still holds the values it was decoded into.
func (p *parsedCheck) sameAs(r *CheckRequest) bool {
	a := &r.Request
	if a.Method != p.method || a.URL != p.url || !p.query.same(a.Query) || !p.body.same(a.Body) || !p.schema.same(r.Schema) {
		return false
	}
	if r.Economics == nil {
		if p.hasEconomics {
			return false
		}
	} else if !p.hasEconomics || *r.Economics != p.economics {
		return false
	}
	if len(a.Headers) != len(p.headers) {
		return false
	}
	for _, h := range p.headers {
		if v, ok := a.Headers[h.name]; !ok || v != h.value {
			return false
		}
	}
	return true
}

// parsedFor returns what decoding kept of req, its outcome included,
// decoding it afresh when it was built in Go or changed after decoding.
func parsedFor(req *CheckRequest) (*parsedCheck, error) {
	if req == nil {
		return nil, &Error{Code: ErrorInvalidRequest, Message: "the check request is nil"}
	}
	if p := req.parsed; p != nil && p.sameAs(req) {
		return p, nil
	}
	if err := checkRequestUTF8(req); err != nil {
		return nil, err
	}
	if e := req.Economics; e != nil {
		if err := numberFieldIssues(
			numberField{"/economics/downstreamCostUsd", e.DownstreamCostUSD, true},
			numberField{"/economics/retryCostUsd", e.RetryCostUSD, true},
			numberField{"/economics/priorInvalidProbability", e.PriorInvalidProbability, false},
			numberField{"/economics/preflightPriceUsd", e.PreflightPriceUSD, false},
			numberField{"/economics/budgetRemainingUsd", e.BudgetRemainingUSD, false},
		); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, &Error{Code: ErrorInvalidJSON, Message: "the request cannot be encoded as JSON: " + err.Error()}
	}
	fresh, err := DecodeCheckRequest(data)
	if err != nil {
		return nil, err
	}
	return fresh.parsed, nil
}

// publish gives req its exported copy of the payload and records what else
// decoding stored in it, for sameAs.
func (p *parsedToolCall) publish(req *ToolCallRequest, spare []byte) {
	copyOut(spare, []*json.RawMessage{&req.Tool.Request}, []strictjson.Value{p.payload})
	s := *req
	s.parsed, s.ignoredMembers, s.Tool.Request = nil, nil, nil
	if req.Task != nil {
		v := *req.Task
		s.Task = &v
	}
	if req.Capabilities != nil {
		v := *req.Capabilities
		s.Capabilities = &v
	}
	s.History = slices.Clone(req.History)
	p.src = s
}

// sameAs reports whether r still holds the values it was decoded into.
func (p *parsedToolCall) sameAs(r *ToolCallRequest) bool {
	t := &p.src
	if t.RunID != r.RunID || t.StepID != r.StepID || t.FreshnessTTLSeconds != r.FreshnessTTLSeconds ||
		t.RetryCap != r.RetryCap || t.PreflightPriceUSD != r.PreflightPriceUSD {
		return false
	}
	a, b := &t.Tool, &r.Tool
	if a.Provider != b.Provider || a.Operation != b.Operation || !textOf(p.payload).same(b.Request) ||
		a.EstimatedExternalCostUSD != b.EstimatedExternalCostUSD || a.EstimatedModelCostUSD != b.EstimatedModelCostUSD {
		return false
	}
	if t.Budget != r.Budget {
		return false
	}
	if (t.Task == nil) != (r.Task == nil) || (t.Task != nil && *t.Task != *r.Task) {
		return false
	}
	if (t.Capabilities == nil) != (r.Capabilities == nil) || (t.Capabilities != nil && *t.Capabilities != *r.Capabilities) {
		return false
	}
	return slices.Equal(t.History, r.History)
}

// parsedToolCallFor returns the parsed form of req, decoding it afresh when
// it was built in Go or changed after decoding.
func parsedToolCallFor(req *ToolCallRequest) (*ToolCallRequest, *parsedToolCall, error) {
	if req == nil {
		return nil, nil, &Error{Code: ErrorInvalidRequest, Message: "the tool-call request is nil"}
	}
	if p := req.parsed; p != nil && p.sameAs(req) {
		return req, p, nil
	}
	if err := toolCallUTF8(req); err != nil {
		return nil, nil, err
	}
	fields := []numberField{
		{"/tool/estimatedExternalCostUsd", req.Tool.EstimatedExternalCostUSD, true},
		{"/tool/estimatedModelCostUsd", req.Tool.EstimatedModelCostUSD, false},
		{"/budget/remainingUsd", req.Budget.RemainingUSD, true},
		{"/budget/reservedUsd", req.Budget.ReservedUSD, false},
		{"/budget/maxToolCallsRemaining", req.Budget.MaxToolCallsRemaining, false},
		{"/freshnessTtlSeconds", req.FreshnessTTLSeconds, false},
		{"/retryCap", req.RetryCap, false},
		{"/preflightPriceUsd", req.PreflightPriceUSD, false},
	}
	for i, h := range req.History {
		fields = append(fields, numberField{"/history/" + strconv.Itoa(i) + "/ageSeconds", h.AgeSeconds, true})
	}
	if err := numberFieldIssues(fields...); err != nil {
		return nil, nil, err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, nil, &Error{Code: ErrorInvalidJSON, Message: "the request cannot be encoded as JSON: " + err.Error()}
	}
	fresh, err := DecodeToolCallRequest(data)
	if err != nil {
		return nil, nil, err
	}
	return fresh, fresh.parsed, nil
}
