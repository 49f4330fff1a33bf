package preflight

import (
	"strconv"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/jsonv"
)

// Limits of a tool-call request, counted over the whole body: the top-level
// object is level 1 and one node; every value is a node, object keys are not.
const (
	maxToolCallDepth = 16
	maxToolCallNodes = 10000
	maxHistory       = 100
)

const defaultDecidePrice = "0.002"

var (
	toolCallTopMembers = []string{"runId", "stepId", "tool", "budget", "task", "history", "capabilities",
		"freshnessTtlSeconds", "retryCap", "preflightPriceUsd"}
	toolMembers         = []string{"provider", "operation", "request", "estimatedExternalCostUsd", "estimatedModelCostUsd"}
	budgetMembers       = []string{"remainingUsd", "reservedUsd", "maxToolCallsRemaining"}
	taskMembers         = []string{"goalHash"}
	capabilityMembers   = []string{"canReusePriorResult", "canReduceScope"}
	historyEntryMembers = []string{"toolCallId", "fingerprint", "outcome", "resultReference", "ageSeconds", "goalHash"}
)

// DecodeToolCallRequest parses and checks the body of
// POST /v0.2/preflight/tool-call. It reports every broken input rule at once
// in an *Error: malformed JSON (invalid_json), a body deeper than 16 levels,
// over 10,000 values or with more than 100 history entries
// (limit_exceeded), and missing, ill-typed, out-of-range or unknown members
// (invalid_request). Unknown top-level members are not errors: they are
// ignored and listed in the decision's issues.
//
// Problems inside tool.request are not errors either: they make the
// decision a block (see Decide).
//
// The returned request keeps its parsed form, so Decide does no parsing. Its
// Tool.Request is its own copy and may be edited, in place or not: Decide
// notices any edit and decides the edited request as if it were sent anew.
func DecodeToolCallRequest(data []byte) (*ToolCallRequest, error) {
	root, perr := parseObject(data, jsonv.Limits{MaxDepth: maxToolCallDepth, MaxNodes: maxToolCallNodes})
	if perr != nil {
		return nil, perr
	}
	var d decoder
	req := &ToolCallRequest{}
	p := &parsedToolCall{}
	d.object(root, "", toolCallTopMembers, &req.ignoredMembers)

	if h, ok := root.Get("history"); ok && h.Kind() == jsonv.Array && h.Len() > maxHistory {
		return nil, issuesError([]Issue{{Path: "/history", Code: IssueMaxHistory,
			Message: "expected at most 100 history entries, found " + strconv.Itoa(h.Len())}})
	}
	if v := d.member(root, "", "runId", true); v.IsValid() {
		req.RunID, _ = d.str(v, memberPath{"", "runId"}, 1)
	}
	if v := d.member(root, "", "stepId", true); v.IsValid() {
		req.StepID, _ = d.str(v, memberPath{"", "stepId"}, 1)
	}
	if v := d.member(root, "", "tool", true); v.IsValid() {
		p.payload = d.tool(v, "/tool", &req.Tool)
	}
	if v := d.member(root, "", "budget", true); v.IsValid() && d.object(v, "/budget", budgetMembers, nil) {
		b := &req.Budget
		if m := d.member(v, "/budget", "remainingUsd", true); m.IsValid() {
			b.RemainingUSD, _ = d.amount(m, memberPath{"/budget", "remainingUsd"}, maxNumeric)
		}
		if m := d.member(v, "/budget", "reservedUsd", false); m.IsValid() {
			b.ReservedUSD, _ = d.amount(m, memberPath{"/budget", "reservedUsd"}, maxNumeric)
		}
		if m := d.member(v, "/budget", "maxToolCallsRemaining", false); m.IsValid() {
			b.MaxToolCallsRemaining, _ = d.integer(m, memberPath{"/budget", "maxToolCallsRemaining"}, 0)
		}
	}
	if v := d.member(root, "", "task", false); v.IsValid() && d.object(v, "/task", taskMembers, nil) {
		req.Task = &Task{}
		if m := d.member(v, "/task", "goalHash", false); m.IsValid() {
			req.Task.GoalHash, _ = d.str(m, memberPath{"/task", "goalHash"}, 0)
		}
	}
	if v := d.member(root, "", "history", false); v.IsValid() {
		req.History = d.history(v)
	}
	if v := d.member(root, "", "capabilities", false); v.IsValid() && d.object(v, "/capabilities", capabilityMembers, nil) {
		req.Capabilities = &Capabilities{}
		if m := d.member(v, "/capabilities", "canReusePriorResult", false); m.IsValid() {
			req.Capabilities.CanReusePriorResult = d.boolean(m, memberPath{"/capabilities", "canReusePriorResult"})
		}
		if m := d.member(v, "/capabilities", "canReduceScope", false); m.IsValid() {
			req.Capabilities.CanReduceScope = d.boolean(m, memberPath{"/capabilities", "canReduceScope"})
		}
	}
	if v := d.member(root, "", "freshnessTtlSeconds", false); v.IsValid() {
		req.FreshnessTTLSeconds, _ = d.amount(v, memberPath{"", "freshnessTtlSeconds"}, maxNumeric)
	}
	if v := d.member(root, "", "retryCap", false); v.IsValid() {
		req.RetryCap, _ = d.integer(v, memberPath{"", "retryCap"}, 1)
	}
	if v := d.member(root, "", "preflightPriceUsd", false); v.IsValid() {
		req.PreflightPriceUSD, _ = d.amount(v, memberPath{"", "preflightPriceUsd"}, maxNumeric)
	}
	if e := d.err(); e != nil {
		return nil, e
	}
	p.publish(req)
	req.parsed = p
	return req, nil
}

// tool decodes the tool object v into t and returns its payload, which t
// gets from publish (see decoded.go).
func (d *decoder) tool(v jsonv.Value, path string, t *ToolCall) jsonv.Value {
	if !d.object(v, path, toolMembers, nil) {
		return jsonv.Value{}
	}
	if m := d.member(v, path, "provider", true); m.IsValid() {
		t.Provider, _ = d.str(m, memberPath{path, "provider"}, 1)
	}
	if m := d.member(v, path, "operation", true); m.IsValid() {
		t.Operation, _ = d.str(m, memberPath{path, "operation"}, 1)
	}
	var payload jsonv.Value
	if m := d.member(v, path, "request", true); m.IsValid() {
		if m.Kind() != jsonv.Object {
			d.add(path+"/request", IssueType, "expected the provider payload as an object, found "+kindName(m))
		} else {
			payload = m
		}
	}
	if m := d.member(v, path, "estimatedExternalCostUsd", true); m.IsValid() {
		t.EstimatedExternalCostUSD, _ = d.amount(m, memberPath{path, "estimatedExternalCostUsd"}, maxNumeric)
	}
	if m := d.member(v, path, "estimatedModelCostUsd", false); m.IsValid() {
		t.EstimatedModelCostUSD, _ = d.amount(m, memberPath{path, "estimatedModelCostUsd"}, maxNumeric)
	}
	return payload
}

func (d *decoder) history(v jsonv.Value) []HistoryEntry {
	if v.Kind() != jsonv.Array {
		d.add("/history", IssueType, "expected an array of history entries, found "+kindName(v))
		return nil
	}
	out := make([]HistoryEntry, 0, v.Len())
	for it := v.Iter(); it.Next(); {
		path := "/history/" + strconv.Itoa(it.Index())
		ev := it.Value()
		if !d.object(ev, path, historyEntryMembers, nil) {
			continue
		}
		var h HistoryEntry
		if m := d.member(ev, path, "toolCallId", true); m.IsValid() {
			h.ToolCallID, _ = d.str(m, memberPath{path, "toolCallId"}, 0)
		}
		if m := d.member(ev, path, "fingerprint", true); m.IsValid() {
			h.Fingerprint, _ = d.str(m, memberPath{path, "fingerprint"}, 0)
		}
		if m := d.member(ev, path, "outcome", true); m.IsValid() {
			if s, ok := d.str(m, memberPath{path, "outcome"}, 0); ok {
				switch o := Outcome(s); o {
				case OutcomeSuccess, OutcomeTerminalFailure, OutcomeTransientFailure:
					h.Outcome = o
				default:
					d.add(path+"/outcome", IssueEnum, "expected one of \"success\", \"terminal_failure\", \"transient_failure\", found "+strconv.Quote(clip.String(s)))
				}
			}
		}
		if m := d.member(ev, path, "resultReference", false); m.IsValid() {
			h.ResultReference, _ = d.str(m, memberPath{path, "resultReference"}, 0)
		}
		if m := d.member(ev, path, "ageSeconds", true); m.IsValid() {
			h.AgeSeconds, _ = d.amount(m, memberPath{path, "ageSeconds"}, maxNumeric)
		}
		if m := d.member(ev, path, "goalHash", false); m.IsValid() {
			h.GoalHash, _ = d.str(m, memberPath{path, "goalHash"}, 0)
		}
		out = append(out, h)
	}
	return out
}
