package mcpguard

import (
	"context"

	"github.com/agentpreflight/preflight"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
)

// CallReport is what the guard did with one call of [Session.CallTool]:
// filled in when the call's context carries it (see [WithCallReport]),
// for an operator's log line, metrics and spans. It is written by the
// goroutine of the call only, before CallTool returns.
type CallReport struct {
	// How says whether the call ran, was reused, coalesced or withheld.
	// It is meaningful only when Decided or Repeat is true; a call that
	// was forwarded but did not run has HowRan, the way it went, and
	// NotRun.
	How tools.How
	// NotRun is true when the call was forwarded and the server refused
	// it before running it ([ErrNotRun]): its reservation was given back,
	// and Report has the decision but no money.
	NotRun bool
	// Decided is true when the guard decided the call (Report.Decision is
	// then set).
	Decided bool
	// Repeat is true when the call was answered by the exactly-once
	// memory: it joined an identical call in flight or got the answer of
	// one that completed within its idempotency window.
	Repeat bool
	// NotEvaluated is true when the arguments could not be evaluated.
	NotEvaluated bool
	// SchemaUnchecked, when not empty, says why the tool's listed
	// inputSchema could not be used (a $ref to another document, an
	// unknown $schema, …): the call's arguments were taken as any object.
	SchemaUnchecked string
	// OutputIssues, when not empty, are where the result's
	// structuredContent does not match the tool's listed outputSchema
	// (paths under "/structuredContent"): a warning, never a block; the
	// result was passed on as the tool returned it. See
	// Options.NoOutputCheck.
	OutputIssues []preflight.Issue
	// Approval, for a call that needs a person's approval (see
	// Approvals), is "asked" (answered with input_required, or asked
	// of a client of an earlier generation), "approved", or why it was not
	// run: "declined", "invalid", "expired", "used" or "unavailable".
	Approval string
	// Report is the Guard's report: the decision with its reason codes,
	// and the money reserved and settled when the call ran (none for a
	// call that did not run).
	Report agent.Report
}

type callReportKey struct{}

// WithCallReport returns a context whose calls of CallTool fill in r.
func WithCallReport(ctx context.Context, r *CallReport) context.Context {
	return context.WithValue(ctx, callReportKey{}, r)
}

// note fills in the CallReport of ctx, if any, from ans.
// noteNotRun marks the CallReport of ctx, if any, as a call that did not
// run, decided with dec for req.
func noteNotRun(ctx context.Context, req *preflight.ToolCallRequest, dec *preflight.ToolCallDecision) {
	note(ctx, tools.Answer{Report: agent.Report{Decision: dec, Request: req}})
	if r, _ := ctx.Value(callReportKey{}).(*CallReport); r != nil {
		r.NotRun = true
	}
}

func note(ctx context.Context, ans tools.Answer) {
	if r, _ := ctx.Value(callReportKey{}).(*CallReport); r != nil {
		r.How, r.Report, r.Decided = ans.How, ans.Report, ans.Report.Decision != nil
	}
}

// noteApproval notes in the CallReport of ctx, if any, what became of
// the call's approval.
func noteApproval(ctx context.Context, what string) {
	if r, _ := ctx.Value(callReportKey{}).(*CallReport); r != nil {
		r.Approval = what
	}
}

// noteRepeat marks the CallReport of ctx, if any, as a repeat.
func noteRepeat(ctx context.Context) {
	if r, _ := ctx.Value(callReportKey{}).(*CallReport); r != nil {
		r.Repeat = true
	}
}

// noteNotEvaluated marks the CallReport of ctx, if any, as not evaluated.
func noteNotEvaluated(ctx context.Context) {
	if r, _ := ctx.Value(callReportKey{}).(*CallReport); r != nil {
		r.NotEvaluated = true
	}
}

// noteOutput records in the CallReport of ctx, if any, where the result
// did not match the tool's outputSchema.
func noteOutput(ctx context.Context, issues []preflight.Issue) {
	if r, _ := ctx.Value(callReportKey{}).(*CallReport); r != nil && len(issues) > 0 {
		r.OutputIssues = issues
	}
}

// noteUnchecked records in the CallReport of ctx, if any, why the tool's
// arguments were not checked ("" when they were).
func noteUnchecked(ctx context.Context, reason string) {
	if r, _ := ctx.Value(callReportKey{}).(*CallReport); r != nil && reason != "" {
		r.SchemaUnchecked = reason
	}
}
