package tools

import (
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

func TestReportMessage(t *testing.T) {
	dec := func(v preflight.Verdict, code preflight.ReasonCode, issues ...preflight.Issue) *preflight.ToolCallDecision {
		return &preflight.ToolCallDecision{Verdict: v, ReasonCodes: []preflight.ReasonCode{code}, Issues: issues,
			MatchedCallID: "call-3", Estimated: preflight.Estimate{AvoidableExternalCostUSD: "0.25"}}
	}
	tests := []struct {
		name string
		rep  agent.Report
		want string
	}{
		{"ran", agent.Report{Decision: dec(preflight.VerdictAllow, preflight.ReasonNoProvenWaste), Called: true}, ""},
		{"reuse", agent.Report{Decision: dec(preflight.VerdictReuse, preflight.ReasonReuseFreshResult)}, ""},
		{"invalid", agent.Report{Decision: dec(preflight.VerdictBlock, preflight.ReasonInvalidPayload,
			preflight.Issue{Path: "/tool/request/symbol", Message: "expected at least 1 character"})},
			`not run: the arguments of "quote" break its input schema (/symbol: expected at least 1 character); fix the arguments and call it again instead`},
		{"retry cap", agent.Report{Decision: dec(preflight.VerdictBlock, preflight.ReasonRetryCapReached)},
			`not run: this exact call of "quote" already failed in a way that will repeat (call "call-3"); change the arguments, use another tool, or report the failure instead`},
		{"budget", agent.Report{Decision: dec(preflight.VerdictDefer, preflight.ReasonBudgetExceeded), EstimateUSD: "0.25", FreeUSD: "0.1"},
			`not run: the estimated cost of "quote" ($0.25; $0.1 left) does not fit the budget left in this session; answer with the results you already have instead`},
		{"over budget, unknown tool", agent.Report{Decision: dec(preflight.VerdictAdvise, preflight.ReasonUnsupportedOperation), OverBudget: true, EstimateUSD: "2", FreeUSD: "1"},
			`not run: "quote" is not in the catalog and its estimated cost ($2; $1 left) does not fit the budget left; answer with the results you already have instead`},
		{"call limit", agent.Report{Decision: dec(preflight.VerdictDefer, preflight.ReasonCallLimitReached)},
			`not run: the tool-call limit of this session is reached; answer with the results you already have instead`},
		{"typo", agent.Report{Decision: dec(preflight.VerdictAdvise, preflight.ReasonUnsupportedOperation,
			preflight.Issue{Code: preflight.IssueUnknownOperation, Message: "no such"},
			preflight.Issue{Code: preflight.IssueSimilarOperation, Message: `did you mean "mcp/quotes"? (one edit away; the call is not decided as that operation)`})},
			`not run: there is no tool "quote"; did you mean "quotes"? call that tool instead`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := message(tt.rep, "quote")
			if got != tt.want {
				t.Fatalf("Message:\n got %q\nwant %q", got, tt.want)
			}
			if got != "" && (!strings.HasPrefix(got, "not run: ") || !strings.HasSuffix(got, " instead")) {
				t.Fatalf("%q is not of the form \"not run: …; … instead\"", got)
			}
		})
	}
}
