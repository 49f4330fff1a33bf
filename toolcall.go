package preflight

import (
	"strconv"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/strictjson"
)

// Limits of a tool-call request, counted over the whole body: the top-level
// object is level 1 and one node; every value is a node, object keys are not.
const (
	maxToolCallDepth = 16
	maxToolCallNodes = 10000
	maxHistory       = MaxHistory
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
	root, spare, perr := parseObject(data, strictjson.Limits{MaxDepth: maxToolCallDepth, MaxNodes: maxToolCallNodes}, true, strictjson.Parse)
	if perr != nil {
		return nil, perr
	}
	var d decoder
	req := &ToolCallRequest{}
	p := &parsedToolCall{}
	var top [10]strictjson.Value // toolCallTopMembers
	d.members(root, "", toolCallTopMembers, top[:], &req.ignoredMembers)

	if h := top[5]; h.IsValid() && h.Kind() == strictjson.Array && h.Len() > maxHistory {
		return nil, issuesError([]Issue{{Path: "/history", Code: IssueMaxHistory,
			Message: "expected at most 100 history entries, found " + strconv.Itoa(h.Len())}})
	}
	if v := d.need(top[0], "", "runId"); v.IsValid() {
		req.RunID, _ = d.str(v, memberPath{"", "runId"}, 1)
	}
	if v := d.need(top[1], "", "stepId"); v.IsValid() {
		req.StepID, _ = d.str(v, memberPath{"", "stepId"}, 1)
	}
	if v := d.need(top[2], "", "tool"); v.IsValid() {
		p.payload = d.tool(v, "/tool", &req.Tool)
	}
	if v := d.need(top[3], "", "budget"); v.IsValid() {
		d.budget(v, "/budget", &req.Budget)
	}
	if v := top[4]; v.IsValid() {
		req.Task = d.task(v, "/task")
	}
	if v := top[5]; v.IsValid() {
		req.History = d.history(v)
	}
	if v := top[6]; v.IsValid() {
		req.Capabilities = d.capabilities(v, "/capabilities")
	}
	if v := top[7]; v.IsValid() {
		req.FreshnessTTLSeconds, _ = d.amount(v, memberPath{"", "freshnessTtlSeconds"}, maxNumeric)
	}
	if v := top[8]; v.IsValid() {
		req.RetryCap, _ = d.integer(v, memberPath{"", "retryCap"}, 1)
	}
	if v := top[9]; v.IsValid() {
		req.PreflightPriceUSD, _ = d.amount(v, memberPath{"", "preflightPriceUsd"}, maxNumeric)
	}
	if e := d.err(); e != nil {
		return nil, e
	}
	p.publish(req, spare)
	req.parsed = p
	return req, nil
}

// tool decodes the tool object v into t and returns its payload, which t
// gets from publish (see decoded.go).
func (d *decoder) tool(v strictjson.Value, path string, t *ToolCall) strictjson.Value {
	var f [5]strictjson.Value // toolMembers
	if !d.fields(v, path, toolMembers, f[:]) {
		return strictjson.Value{}
	}
	if m := d.need(f[0], path, "provider"); m.IsValid() {
		t.Provider, _ = d.str(m, memberPath{path, "provider"}, 1)
	}
	if m := d.need(f[1], path, "operation"); m.IsValid() {
		t.Operation, _ = d.str(m, memberPath{path, "operation"}, 1)
	}
	var payload strictjson.Value
	if m := d.need(f[2], path, "request"); m.IsValid() {
		if m.Kind() != strictjson.Object {
			d.add(path+"/request", IssueType, "expected the provider payload as an object, found "+kindName(m))
		} else {
			payload = m
		}
	}
	if m := d.need(f[3], path, "estimatedExternalCostUsd"); m.IsValid() {
		t.EstimatedExternalCostUSD, _ = d.amount(m, memberPath{path, "estimatedExternalCostUsd"}, maxNumeric)
	}
	if m := f[4]; m.IsValid() {
		t.EstimatedModelCostUSD, _ = d.amount(m, memberPath{path, "estimatedModelCostUsd"}, maxNumeric)
	}
	return payload
}

func (d *decoder) budget(v strictjson.Value, path string, b *Budget) {
	var f [3]strictjson.Value // budgetMembers
	if !d.fields(v, path, budgetMembers, f[:]) {
		return
	}
	if m := d.need(f[0], path, "remainingUsd"); m.IsValid() {
		b.RemainingUSD, _ = d.amount(m, memberPath{path, "remainingUsd"}, maxNumeric)
	}
	if m := f[1]; m.IsValid() {
		b.ReservedUSD, _ = d.amount(m, memberPath{path, "reservedUsd"}, maxNumeric)
	}
	if m := f[2]; m.IsValid() {
		b.MaxToolCallsRemaining, _ = d.integer(m, memberPath{path, "maxToolCallsRemaining"}, 0)
	}
}

func (d *decoder) task(v strictjson.Value, path string) *Task {
	var f [1]strictjson.Value // taskMembers
	if !d.fields(v, path, taskMembers, f[:]) {
		return nil
	}
	t := &Task{}
	if m := f[0]; m.IsValid() {
		t.GoalHash, _ = d.str(m, memberPath{path, "goalHash"}, 0)
	}
	return t
}

func (d *decoder) capabilities(v strictjson.Value, path string) *Capabilities {
	var f [2]strictjson.Value // capabilityMembers
	if !d.fields(v, path, capabilityMembers, f[:]) {
		return nil
	}
	c := &Capabilities{}
	if m := f[0]; m.IsValid() {
		c.CanReusePriorResult = d.boolean(m, memberPath{path, "canReusePriorResult"})
	}
	if m := f[1]; m.IsValid() {
		c.CanReduceScope = d.boolean(m, memberPath{path, "canReduceScope"})
	}
	return c
}

func (d *decoder) history(v strictjson.Value) []HistoryEntry {
	if v.Kind() != strictjson.Array {
		d.add("/history", IssueType, "expected an array of history entries, found "+kindName(v))
		return nil
	}
	out := make([]HistoryEntry, 0, v.Len())
	for it := v.Iter(); it.Next(); {
		path := "/history/" + strconv.Itoa(it.Index())
		ev := it.Value()
		var f [6]strictjson.Value // historyEntryMembers
		if !d.fields(ev, path, historyEntryMembers, f[:]) {
			continue
		}
		var h HistoryEntry
		if m := d.need(f[0], path, "toolCallId"); m.IsValid() {
			h.ToolCallID, _ = d.str(m, memberPath{path, "toolCallId"}, 0)
		}
		if m := d.need(f[1], path, "fingerprint"); m.IsValid() {
			h.Fingerprint, _ = d.str(m, memberPath{path, "fingerprint"}, 0)
		}
		if m := d.need(f[2], path, "outcome"); m.IsValid() {
			if s, ok := d.str(m, memberPath{path, "outcome"}, 0); ok {
				switch o := Outcome(s); o {
				case OutcomeSuccess, OutcomeTerminalFailure, OutcomeTransientFailure:
					h.Outcome = o
				default:
					d.add(path+"/outcome", IssueEnum, "expected one of \"success\", \"terminal_failure\", \"transient_failure\", found "+strconv.Quote(clip.String(s)))
				}
			}
		}
		if m := f[3]; m.IsValid() {
			h.ResultReference, _ = d.str(m, memberPath{path, "resultReference"}, 0)
		}
		if m := d.need(f[4], path, "ageSeconds"); m.IsValid() {
			h.AgeSeconds, _ = d.amount(m, memberPath{path, "ageSeconds"}, maxNumeric)
		}
		if m := f[5]; m.IsValid() {
			h.GoalHash, _ = d.str(m, memberPath{path, "goalHash"}, 0)
		}
		out = append(out, h)
	}
	return out
}
