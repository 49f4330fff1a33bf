package preflight

import (
	"encoding/json"
	"strconv"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/internal/redecide"
	"github.com/agentpreflight/preflight/strictjson"
)

// Limits of a tool-call request, counted over the whole body: the top-level
// object is level 1 and one node; every value is a node, object keys are not.
const (
	maxToolCallDepth = 16
	maxToolCallNodes = 10000
)

// toolCallLimits bounds a tool-call request document.
var toolCallLimits = strictjson.Limits{MaxDepth: maxToolCallDepth, MaxNodes: maxToolCallNodes}

var (
	toolCallTopMembers = []string{"runId", "stepId", "tool", "budget", "task", "history", "capabilities",
		"freshnessTtlSeconds", "retryCap", "preflightPriceUsd"}
	toolMembers         = []string{"provider", "operation", "request", "estimatedExternalCostUsd", "estimatedModelCostUsd"}
	budgetMembers       = []string{"remainingUsd", "reservedUsd", "maxToolCallsRemaining"}
	taskMembers         = []string{"goalHash"}
	capabilityMembers   = []string{"canReusePriorResult", "canReduceScope"}
	historyEntryMembers = []string{"toolCallId", "fingerprint", "outcome", "resultReference", "ageSeconds", "goalHash"}
)

// DecodeToolCallRequest reads the body of POST /v0.2/preflight/tool-call
// into a ToolCallRequest, applying every input rule DecideJSON applies and
// reporting a broken one with the same error; it decides nothing. Unknown
// top-level members are not errors: they are left out of the request
// (DecideJSON lists them in the decision's issues). Tool.Request is a copy
// of the text sent, the request's own.
func DecodeToolCallRequest(data []byte) (*ToolCallRequest, error) {
	root, perr := parseObject(data, toolCallLimits, strictjson.Parse)
	if perr != nil {
		return nil, perr
	}
	req := &ToolCallRequest{}
	var in toolCallInput
	if err := decodeToolCall(root, req, &in); err != nil {
		return nil, err
	}
	req.Tool.Request = rawCopy(in.payload)
	return req, nil
}

// toolCallInput is what Decide reads of a tool-call request besides its
// strings and flags, whether it came as bytes (DecideJSON) or as Go values
// (Decide): the payload parsed, the numbers parsed, and the unknown
// top-level members.
type toolCallInput struct {
	payload strictjson.Value
	facts   toolCallFacts
	ignored []Issue          // unknown top-level members, listed in the decision
	tree    strictjson.Value // the tree to release, if any
	// memo, when keep is set, keeps the payload's tree and fingerprint
	// for the next decision of the same call (see package redecide).
	memo redecide.Memo
	keep bool
}

// toolCallFacts are the numbers of a tool-call request, parsed once.
type toolCallFacts struct {
	external, model     decimal.Dec
	remaining, reserved decimal.Dec
	maxCalls            decimal.Dec
	limitsCalls         bool          // maxToolCallsRemaining was given
	ttl                 decimal.Dec   // 0 when not given
	retryCap            decimal.Dec   // 0 when not given (the default is 1)
	price               decimal.Dec   // the default when not given
	ages                []decimal.Dec // of the history entries, in order
}

// decodeToolCall reads the tool-call request object root into req and in,
// and reports every broken input rule.
func decodeToolCall(root strictjson.Value, req *ToolCallRequest, in *toolCallInput) *Error {
	var d decoder
	var top [10]strictjson.Value // toolCallTopMembers
	d.members(root, "", toolCallTopMembers, top[:], &in.ignored)

	if h := top[5]; h.IsValid() && h.Kind() == strictjson.Array && h.Len() > MaxHistory {
		return tooMuchHistory(h.Len())
	}
	f := &in.facts
	f.price = defaultDecidePrice
	if v := d.need(top[0], "", "runId"); v.IsValid() {
		req.RunID, _ = d.str(v, memberPath{"", "runId"}, 1)
	}
	if v := d.need(top[1], "", "stepId"); v.IsValid() {
		req.StepID, _ = d.str(v, memberPath{"", "stepId"}, 1)
	}
	if v := d.need(top[2], "", "tool"); v.IsValid() {
		in.payload = d.tool(v, "/tool", &req.Tool, f)
	}
	if v := d.need(top[3], "", "budget"); v.IsValid() {
		d.budget(v, "/budget", &req.Budget, f)
	}
	if v := top[4]; v.IsValid() {
		req.Task = d.task(v, "/task")
	}
	if v := top[5]; v.IsValid() {
		req.History = d.history(v, f)
	}
	if v := top[6]; v.IsValid() {
		req.Capabilities = d.capabilities(v, "/capabilities")
	}
	if v := top[7]; v.IsValid() {
		f.ttl, _ = d.amount(v, memberPath{"", "freshnessTtlSeconds"}, maxNumeric)
		req.FreshnessTTLSeconds = numberText(v)
	}
	if v := top[8]; v.IsValid() {
		f.retryCap, _ = d.integer(v, memberPath{"", "retryCap"}, 1)
		req.RetryCap = numberText(v)
	}
	if v := top[9]; v.IsValid() {
		f.price, _ = d.amount(v, memberPath{"", "preflightPriceUsd"}, maxNumeric)
		req.PreflightPriceUSD = numberText(v)
	}
	return d.err()
}

// tooMuchHistory is the error for a history of n entries, n > MaxHistory.
func tooMuchHistory(n int) *Error {
	return issuesError([]Issue{{Path: "/history", Code: IssueMaxHistory,
		Message: "expected at most 100 history entries, found " + strconv.Itoa(n)}})
}

// numberText is the text of v, a number (or anything, for a request that
// is refused anyway).
func numberText(v strictjson.Value) json.Number { return json.Number(v.Raw()) }

// tool decodes the tool object v into t and f and returns its payload.
func (d *decoder) tool(v strictjson.Value, path string, t *ToolCall, f *toolCallFacts) strictjson.Value {
	var m [5]strictjson.Value // toolMembers
	if !d.fields(v, path, toolMembers, m[:]) {
		return strictjson.Value{}
	}
	if x := d.need(m[0], path, "provider"); x.IsValid() {
		t.Provider, _ = d.str(x, memberPath{path, "provider"}, 1)
	}
	if x := d.need(m[1], path, "operation"); x.IsValid() {
		t.Operation, _ = d.str(x, memberPath{path, "operation"}, 1)
	}
	var payload strictjson.Value
	if x := d.need(m[2], path, "request"); x.IsValid() && d.payload(x, path) {
		payload = x
	}
	if x := d.need(m[3], path, "estimatedExternalCostUsd"); x.IsValid() {
		f.external, _ = d.amount(x, memberPath{path, "estimatedExternalCostUsd"}, maxNumeric)
		t.EstimatedExternalCostUSD = numberText(x)
	}
	if x := m[4]; x.IsValid() {
		f.model, _ = d.amount(x, memberPath{path, "estimatedModelCostUsd"}, maxNumeric)
		t.EstimatedModelCostUSD = numberText(x)
	}
	return payload
}

// payload reports whether the payload v is an object.
func (d *decoder) payload(v strictjson.Value, path string) bool {
	if v.Kind() != strictjson.Object {
		d.add(path+"/request", IssueType, "expected the provider payload as an object, found "+kindName(v))
		return false
	}
	return true
}

func (d *decoder) budget(v strictjson.Value, path string, b *Budget, f *toolCallFacts) {
	var m [3]strictjson.Value // budgetMembers
	if !d.fields(v, path, budgetMembers, m[:]) {
		return
	}
	if x := d.need(m[0], path, "remainingUsd"); x.IsValid() {
		f.remaining, _ = d.amount(x, memberPath{path, "remainingUsd"}, maxNumeric)
		b.RemainingUSD = numberText(x)
	}
	if x := m[1]; x.IsValid() {
		f.reserved, _ = d.amount(x, memberPath{path, "reservedUsd"}, maxNumeric)
		b.ReservedUSD = numberText(x)
	}
	if x := m[2]; x.IsValid() {
		f.maxCalls, f.limitsCalls = d.integer(x, memberPath{path, "maxToolCallsRemaining"}, 0)
		b.MaxToolCallsRemaining = numberText(x)
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

func (d *decoder) history(v strictjson.Value, facts *toolCallFacts) []HistoryEntry {
	if v.Kind() != strictjson.Array {
		d.add("/history", IssueType, "expected an array of history entries, found "+kindName(v))
		return nil
	}
	out := make([]HistoryEntry, 0, v.Len())
	facts.ages = make([]decimal.Dec, 0, v.Len())
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
				h.Outcome = Outcome(s)
				d.outcome(h.Outcome, path)
			}
		}
		if m := f[3]; m.IsValid() {
			h.ResultReference, _ = d.str(m, memberPath{path, "resultReference"}, 0)
		}
		var age decimal.Dec
		if m := d.need(f[4], path, "ageSeconds"); m.IsValid() {
			age, _ = d.amount(m, memberPath{path, "ageSeconds"}, maxNumeric)
			h.AgeSeconds = numberText(m)
		}
		if m := f[5]; m.IsValid() {
			h.GoalHash, _ = d.str(m, memberPath{path, "goalHash"}, 0)
		}
		out = append(out, h)
		facts.ages = append(facts.ages, age)
	}
	return out
}

// outcome reports o, the outcome of the history entry at path, when it is
// not one of the three.
func (d *decoder) outcome(o Outcome, path string) {
	switch o {
	case OutcomeSuccess, OutcomeTerminalFailure, OutcomeTransientFailure:
	default:
		d.add(path+"/outcome", IssueEnum, "expected one of \"success\", \"terminal_failure\", \"transient_failure\", found "+strconv.Quote(clip.String(string(o))))
	}
}
