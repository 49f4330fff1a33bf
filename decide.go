package preflight

import (
	"encoding/json"
	"strconv"

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
// A request from DecodeToolCallRequest is decided from its parsed form; one
// built in Go is first encoded and put through the same decoder. Its strings
// must be UTF-8, as in JSON: an id, provider, operation, goal hash or
// history string that is not is refused with code invalid_json and an
// invalid_utf8 detail at its pointer, never repaired.
func Decide(req *ToolCallRequest) (*ToolCallDecision, error) {
	return defaultCatalog.decide(req)
}

func (c *Catalog) decide(req *ToolCallRequest) (*ToolCallDecision, error) {
	req, p, err := parsedToolCallFor(req)
	if err != nil {
		return nil, err
	}
	t := &req.Tool
	fp, ferr := fingerprint(t.Provider, t.Operation, p.payload)
	if ferr != nil {
		return nil, ferr
	}
	price := orDefault(req.PreflightPriceUSD, defaultDecidePrice)
	out := &ToolCallDecision{
		RequestFingerprint: fp,
		Issues:             []Issue{},
		Estimated: Estimate{
			PreflightCostUSD:         number(price),
			PriceChargedUSD:          "0",
			AvoidableExternalCostUSD: "0",
			AvoidableModelCostUSD:    "0",
			NetSavingsUSD:            number(decimal.Sub(decimal.Dec{}, price)),
		},
	}
	defer func() { out.Issues = append(out.Issues, req.ignoredMembers...) }()

	// Rule 1.
	op := c.lookup(t.Provider, t.Operation)
	if op == nil {
		out.set(VerdictAdvise, EnforcementAdvisory, confidenceCertain, ReasonUnsupportedOperation)
		out.Issues = append(out.Issues, c.unknownIssues(t)...)
		return out, nil
	}
	// Rule 2.
	if issues := op.payloadIssues(p.payload); len(issues) > 0 {
		out.set(VerdictBlock, EnforcementSafeToSkip, confidenceCertain, ReasonInvalidPayload)
		out.Issues = append(out.Issues, issues...)
		return out, nil
	}
	h := examineHistory(req, op, fp)
	// Rule 3.
	if h.reuse != nil {
		out.set(VerdictReuse, EnforcementSafeToSkip, confidenceReuse, ReasonReuseFreshResult)
		out.MatchedCallID = h.reuse.ToolCallID
		out.Recommendation = &Recommendation{Action: ActionReuseResult, ResultReference: h.reuse.ResultReference}
		external := orDefault(t.EstimatedExternalCostUSD, "0")
		out.Estimated.AvoidableExternalCostUSD = number(external)
		out.Estimated.NetSavingsUSD = number(decimal.Sub(external, price))
		return out, nil
	}
	estimate := decimal.Add(orDefault(t.EstimatedExternalCostUSD, "0"), orDefault(t.EstimatedModelCostUSD, "0"))
	free := decimal.Sub(orDefault(req.Budget.RemainingUSD, "0"), orDefault(req.Budget.ReservedUSD, "0"))
	switch {
	case h.terminal > 0 && decimal.Compare(strconv.Itoa(h.terminal), retryCap(req, op)) >= 0: // Rule 4.
		out.set(VerdictBlock, EnforcementSafeToSkip, confidenceRetry, ReasonRetryCapReached)
		out.MatchedCallID = h.youngestTerminal.ToolCallID
	case req.Budget.MaxToolCallsRemaining != "" && decimal.Compare(string(req.Budget.MaxToolCallsRemaining), "0") == 0: // Rule 5.
		out.set(VerdictDefer, EnforcementSafeToSkip, confidenceCertain, ReasonCallLimitReached)
	case decimal.Cmp(estimate, free) > 0: // Rule 6.
		out.set(VerdictDefer, EnforcementSafeToSkip, confidenceCertain, ReasonBudgetExceeded)
	case req.Capabilities != nil && req.Capabilities.CanReduceScope &&
		decimal.Cmp(decimal.Add(estimate, estimate), free) > 0: // Rule 7.
		out.set(VerdictAdvise, EnforcementAdvisory, confidenceScope, ReasonReduceScope)
		out.Recommendation = &Recommendation{Action: ActionReduceScope}
	default: // Rule 8.
		out.set(VerdictAllow, EnforcementExecute, confidenceAllow, ReasonNoProvenWaste)
	}
	out.ReasonCodes = append(out.ReasonCodes, h.explanations(req, op)...)
	return out, nil
}

func (d *ToolCallDecision) set(v Verdict, e Enforcement, confidence string, first ReasonCode) {
	d.Verdict, d.Enforcement = v, e
	d.Estimated.Confidence = json.Number(confidence)
	d.ReasonCodes = []ReasonCode{first}
}

// retryCap returns the retry cap as number text: the default 1, and always
// 1 for a destructive operation.
func retryCap(req *ToolCallRequest, op *catalogEntry) string {
	if req.RetryCap == "" || op.effects == EffectsDestructive {
		return "1"
	}
	return string(req.RetryCap)
}

// historyFacts is what the history says about one proposal.
type historyFacts struct {
	reuse            *HistoryEntry // the entry to reuse, if rule 3 holds
	terminal         int           // terminal failures with this fingerprint
	youngestTerminal *HistoryEntry
	transient        bool          // a transient failure with this fingerprint exists
	success          *HistoryEntry // youngest matching success, when reuse failed
}

// younger reports whether a is younger than b; on equal ages the later
// entry (a, since entries are visited in order) wins.
func younger(a, b *HistoryEntry) bool {
	return b == nil || decimal.Compare(string(a.AgeSeconds), string(b.AgeSeconds)) <= 0
}

func examineHistory(req *ToolCallRequest, op *catalogEntry, fp string) historyFacts {
	var f historyFacts
	for i := range req.History {
		e := &req.History[i]
		if e.Fingerprint != fp {
			continue
		}
		switch e.Outcome {
		case OutcomeTerminalFailure:
			f.terminal++
			if younger(e, f.youngestTerminal) {
				f.youngestTerminal = e
			}
		case OutcomeTransientFailure:
			f.transient = true
		case OutcomeSuccess:
			if reuseBlocker(req, op, e) == "" {
				if younger(e, f.reuse) {
					f.reuse = e
				}
			} else if younger(e, f.success) {
				f.success = e
			}
		}
	}
	return f
}

// reuseBlocker returns the first reuse condition a matching success entry
// fails, or "" when it can be reused. An operation that is not read-only
// is never reused: REUSE_NOT_PERMITTED, whatever the caller allows.
func reuseBlocker(req *ToolCallRequest, op *catalogEntry, e *HistoryEntry) ReasonCode {
	goal := ""
	if req.Task != nil {
		goal = req.Task.GoalHash
	}
	switch {
	case !op.reusable() || req.Capabilities == nil || !req.Capabilities.CanReusePriorResult:
		return ReasonReuseNotPermitted
	case req.FreshnessTTLSeconds == "" || decimal.Compare(string(req.FreshnessTTLSeconds), "0") <= 0:
		return ReasonReuseTTLMissing
	case goal == "" || e.GoalHash != goal:
		return ReasonReuseGoalMismatch
	case decimal.Compare(string(e.AgeSeconds), string(req.FreshnessTTLSeconds)) > 0:
		return ReasonReuseStale
	case e.ResultReference == "":
		return ReasonReuseNoReference
	}
	return ""
}

// explanations lists the codes that follow the deciding one.
func (f historyFacts) explanations(req *ToolCallRequest, op *catalogEntry) []ReasonCode {
	var out []ReasonCode
	if f.transient {
		out = append(out, ReasonPriorTransientFailure)
	}
	if f.terminal > 0 && decimal.Compare(strconv.Itoa(f.terminal), retryCap(req, op)) < 0 {
		out = append(out, ReasonPriorTerminalFailure)
	}
	if f.success != nil {
		out = append(out, reuseBlocker(req, op, f.success))
	}
	return out
}
