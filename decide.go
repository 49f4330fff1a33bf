package preflight

import (
	"encoding/json"

	"github.com/agentpreflight/preflight/internal/decimal"
)

// Confidence constants of the rules. They are fixed per rule, not
// calibrated probabilities.
const (
	confidenceCertain = "1"
	confidenceReuse   = "0.9"
	confidenceRetry   = "0.9"
	confidenceScope   = "0.6"
	confidenceAllow   = "0.5"
)

// Decide returns the decision for a proposed tool call, with the operations
// of [DefaultCatalog] ([Catalog.Decide] uses others). Rules are tried in
// order and the first that applies decides:
//
//  1. operation not in the catalog: advise / advisory, UNSUPPORTED_OPERATION
//     (issues say what the catalog has, and which operation is one edit away)
//  2. payload breaks its schema: block / safe_to_skip, INVALID_PAYLOAD
//  3. a fresh reusable success in history: reuse / safe_to_skip, REUSE_FRESH_RESULT
//  4. terminal failures of this call reached retryCap: block / safe_to_skip, RETRY_CAP_REACHED
//  5. maxToolCallsRemaining is 0: defer / safe_to_skip, CALL_LIMIT_REACHED
//  6. estimate over remainingUsd − reservedUsd: defer / safe_to_skip, BUDGET_EXCEEDED
//  7. canReduceScope and estimate over half of it: advise / advisory, REDUCE_SCOPE
//  8. otherwise: allow / execute, NO_PROVEN_WASTE
//
// Reuse needs all of: a read-only operation, capabilities.canReusePriorResult, a positive
// freshnessTtlSeconds, a success entry with this fingerprint, a non-empty
// resultReference, a non-empty task.goalHash equal to the entry's, and an
// age no greater than the TTL. For a destructive operation the retry cap is
// 1 whatever retryCap says (see [Effects]). Codes after the first explain why cheaper
// paths were not taken. Decide executes nothing and keeps no state.
//
// Decide applies to the Go values the input rules of [DecideJSON] and
// answers as DecideJSON answers the same request sent as JSON: the same
// decision, or an error with the same code, pointers and messages. It does
// not change req. Tool.Request is read as JSON text exactly as given. Its
// strings must be UTF-8, as in JSON: an id, provider, operation, goal hash
// or history string that is not is refused with code invalid_json and an
// invalid_utf8 detail at its pointer, never repaired. A json.Number field
// must be empty or JSON number text; a required one that is empty is
// missing (encoding/json would write it as 0).
func Decide(req *ToolCallRequest) (*ToolCallDecision, error) {
	return defaultCatalog.Decide(req)
}

// DecideJSON is [Decide] of the request data holds, the body of
// POST /v0.2/preflight/tool-call, as it arrives: one strict parse, every
// input rule applied to what was parsed, then the decision. It reports
// every broken input rule at once in an *Error: malformed JSON
// (invalid_json), a body deeper than 16 levels, over 10,000 values or
// with more than 100 history entries (limit_exceeded), and missing,
// ill-typed, out-of-range or unknown members (invalid_request). Unknown
// top-level members are not errors: they are ignored and listed, after
// any other, in the decision's issues (unknown_field_ignored). Problems
// inside tool.request are not errors either: they make the decision a
// block. The one exception is a payload whose validation under the
// operation's schema needs more work than one call may use (a hostile or
// runaway schema): that is limit_exceeded with a max_work (or, for a
// reference cycle, max_depth) detail at the schema keyword, never a
// payload half checked and allowed.
//
// DecideJSON(data) gives the decision of Decide of
// [DecodeToolCallRequest](data) with those ignored members added, or the
// same error.
func DecideJSON(data []byte) (*ToolCallDecision, error) {
	return defaultCatalog.DecideJSON(data)
}

// fingerprint is the fingerprint of t, whose payload in holds: the one
// in.memo kept for the same provider and operation, or computed (and
// kept there when in.keep is set).
func (in *toolCallInput) fingerprint(t *ToolCall) (string, *Error) {
	m := &in.memo
	if in.keep && m.Fingerprint != "" && m.Provider == t.Provider && m.Operation == t.Operation {
		return m.Fingerprint, nil
	}
	fp, err := fingerprint(t.Provider, t.Operation, in.payload)
	if in.keep && err == nil {
		m.Provider, m.Operation, m.Fingerprint = t.Provider, t.Operation, fp
	}
	return fp, err
}

// decide is the decision on req, whose payload and numbers in holds.
func (c *Catalog) decide(req *ToolCallRequest, in *toolCallInput) (*ToolCallDecision, error) {
	t, f := &req.Tool, &in.facts
	fp, ferr := in.fingerprint(t)
	if ferr != nil {
		return nil, ferr
	}
	out := &ToolCallDecision{
		RequestFingerprint: fp,
		Issues:             []Issue{},
		Estimated: Estimate{
			PreflightCostUSD:         number(f.price),
			PriceChargedUSD:          "0",
			AvoidableExternalCostUSD: "0",
			AvoidableModelCostUSD:    "0",
			NetSavingsUSD:            number(decimal.Sub(decimal.Dec{}, f.price)),
		},
	}
	defer func() { out.Issues = append(out.Issues, in.ignored...) }()

	// Rule 1.
	op := c.lookup(t.Provider, t.Operation)
	if op == nil {
		out.set(VerdictAdvise, EnforcementAdvisory, confidenceCertain, ReasonUnsupportedOperation)
		out.Issues = append(out.Issues, c.unknownIssues(t)...)
		return out, nil
	}
	// Rule 2.
	issues, lerr := op.payloadIssues(in.payload, "/tool/request")
	if lerr != nil {
		return nil, lerr
	}
	if len(issues) > 0 {
		out.set(VerdictBlock, EnforcementSafeToSkip, confidenceCertain, ReasonInvalidPayload)
		out.Issues = append(out.Issues, issues...)
		return out, nil
	}
	h := examineHistory(req, f, op, fp)
	// Rule 3.
	if h.reuse >= 0 {
		e := &req.History[h.reuse]
		out.set(VerdictReuse, EnforcementSafeToSkip, confidenceReuse, ReasonReuseFreshResult)
		out.MatchedCallID = e.ToolCallID
		out.Recommendation = &Recommendation{Action: ActionReuseResult, ResultReference: e.ResultReference}
		out.Estimated.AvoidableExternalCostUSD = number(f.external)
		out.Estimated.NetSavingsUSD = number(decimal.Sub(f.external, f.price))
		return out, nil
	}
	estimate := decimal.Add(f.external, f.model)
	free := decimal.Sub(f.remaining, f.reserved)
	switch {
	case h.terminal > 0 && decimal.Cmp(decimal.FromInt(int64(h.terminal)), retryCap(f, op)) >= 0: // Rule 4.
		out.set(VerdictBlock, EnforcementSafeToSkip, confidenceRetry, ReasonRetryCapReached)
		out.MatchedCallID = req.History[h.youngestTerminal].ToolCallID
	case f.limitsCalls && f.maxCalls.Sign() == 0: // Rule 5.
		out.set(VerdictDefer, EnforcementSafeToSkip, confidenceCertain, ReasonCallLimitReached)
	case !affordable(estimate, f.remaining, f.reserved): // Rule 6.
		out.set(VerdictDefer, EnforcementSafeToSkip, confidenceCertain, ReasonBudgetExceeded)
	case req.Capabilities != nil && req.Capabilities.CanReduceScope &&
		decimal.Cmp(decimal.Add(estimate, estimate), free) > 0: // Rule 7.
		out.set(VerdictAdvise, EnforcementAdvisory, confidenceScope, ReasonReduceScope)
		out.Recommendation = &Recommendation{Action: ActionReduceScope}
	default: // Rule 8.
		out.set(VerdictAllow, EnforcementExecute, confidenceAllow, ReasonNoProvenWaste)
	}
	out.ReasonCodes = append(out.ReasonCodes, h.explanations(req, f, op)...)
	return out, nil
}

func (d *ToolCallDecision) set(v Verdict, e Enforcement, confidence string, first ReasonCode) {
	d.Verdict, d.Enforcement = v, e
	d.Estimated.Confidence = json.Number(confidence)
	d.ReasonCodes = []ReasonCode{first}
}

var one = decimal.FromInt(1)

// retryCap returns the retry cap: the default 1, and always 1 for a
// destructive operation.
func retryCap(f *toolCallFacts, op *catalogEntry) decimal.Dec {
	if f.retryCap.Sign() == 0 || op.effects == EffectsDestructive {
		return one
	}
	return f.retryCap
}

// historyFacts is what the history says about one proposal; entries are
// indexes into the request's History, -1 for none.
type historyFacts struct {
	reuse            int // the entry to reuse, if rule 3 holds
	terminal         int // terminal failures with this fingerprint
	youngestTerminal int
	transient        bool // a transient failure with this fingerprint exists
	success          int  // youngest matching success, when reuse failed
}

// younger reports whether entry a is younger than entry b; on equal ages
// the later entry (a, since entries are visited in order) wins.
func younger(f *toolCallFacts, a, b int) bool {
	return b < 0 || decimal.Cmp(f.ages[a], f.ages[b]) <= 0
}

func examineHistory(req *ToolCallRequest, f *toolCallFacts, op *catalogEntry, fp string) historyFacts {
	h := historyFacts{reuse: -1, youngestTerminal: -1, success: -1}
	for i := range req.History {
		e := &req.History[i]
		if e.Fingerprint != fp {
			continue
		}
		switch e.Outcome {
		case OutcomeTerminalFailure:
			h.terminal++
			if younger(f, i, h.youngestTerminal) {
				h.youngestTerminal = i
			}
		case OutcomeTransientFailure:
			h.transient = true
		case OutcomeSuccess:
			if reuseBlocker(req, f, op, i) == "" {
				if younger(f, i, h.reuse) {
					h.reuse = i
				}
			} else if younger(f, i, h.success) {
				h.success = i
			}
		}
	}
	return h
}

// reuseBlocker returns the first reuse condition the matching success
// entry i fails, or "" when it can be reused. An operation that is not
// read-only is never reused: REUSE_NOT_PERMITTED, whatever the caller
// allows.
func reuseBlocker(req *ToolCallRequest, f *toolCallFacts, op *catalogEntry, i int) ReasonCode {
	e := &req.History[i]
	goal := ""
	if req.Task != nil {
		goal = req.Task.GoalHash
	}
	switch {
	case !op.reusable() || req.Capabilities == nil || !req.Capabilities.CanReusePriorResult:
		return ReasonReuseNotPermitted
	case f.ttl.Sign() <= 0:
		return ReasonReuseTTLMissing
	case goal == "" || e.GoalHash != goal:
		return ReasonReuseGoalMismatch
	case decimal.Cmp(f.ages[i], f.ttl) > 0:
		return ReasonReuseStale
	case e.ResultReference == "":
		return ReasonReuseNoReference
	}
	return ""
}

// explanations lists the codes that follow the deciding one.
func (h historyFacts) explanations(req *ToolCallRequest, f *toolCallFacts, op *catalogEntry) []ReasonCode {
	var out []ReasonCode
	if h.transient {
		out = append(out, ReasonPriorTransientFailure)
	}
	if h.terminal > 0 && decimal.Cmp(decimal.FromInt(int64(h.terminal)), retryCap(f, op)) < 0 {
		out = append(out, ReasonPriorTerminalFailure)
	}
	if h.success >= 0 {
		out = append(out, reuseBlocker(req, f, op, h.success))
	}
	return out
}
