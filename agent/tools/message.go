package tools

import (
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// message returns the one sentence a model should read when a call of
// tool was not run (Answer.Message): what was withheld and why, then what
// to do instead, in the form "not run: …; do … instead". It is "" when
// the call ran (Called), when the report is empty, when it waits on a call
// in flight, and on reuse (the saved result is the answer). The reason
// codes behind it are r.ReasonCodes(); adapters deliver both (MCP: a text
// block and structuredContent).
func message(r agent.Report, tool string) string {
	dec := r.Decision
	if r.Called || dec == nil {
		return ""
	}
	name := strconv.Quote(tool)
	if r.InFlight != nil {
		return ""
	}
	if r.OverCallLimit {
		return "not run: the tool-call limit of this session is reached; answer with the results you already have instead"
	}
	if r.OverBudget {
		return "not run: " + name + " is not in the catalog and its estimated cost" + money(r) +
			" does not fit the budget left; answer with the results you already have instead"
	}
	code := preflight.ReasonCode("")
	if len(dec.ReasonCodes) > 0 {
		code = dec.ReasonCodes[0]
	}
	switch code {
	case preflight.ReasonReuseFreshResult:
		return ""
	case preflight.ReasonInvalidPayload:
		return "not run: the arguments of " + name + " break its input schema (" + issueList(dec.Issues, 3) +
			"); fix the arguments and call it again instead"
	case preflight.ReasonRetryCapReached:
		return "not run: this exact call of " + name + " already failed in a way that will repeat" + matched(dec) +
			"; change the arguments, use another tool, or report the failure instead"
	case preflight.ReasonCallLimitReached:
		return "not run: the tool-call limit of this session is reached; answer with the results you already have instead"
	case preflight.ReasonBudgetExceeded:
		return "not run: the estimated cost of " + name + money(r) +
			" does not fit the budget left in this session; answer with the results you already have instead"
	case preflight.ReasonReduceScope:
		return "not run: " + name + " would spend more than half of the budget left; make a narrower call instead"
	case preflight.ReasonUnsupportedOperation:
		for _, is := range dec.Issues {
			if is.Code == preflight.IssueSimilarOperation {
				near := strings.TrimSuffix(is.Message, " (one edit away; the call is not decided as that operation)")
				// Tools named through a Set share one provider: name
				// them as the model knows them.
				near = strings.ReplaceAll(near, `"`+DefaultProvider+`/`, `"`)
				return "not run: there is no tool " + name + "; " + near + " call that tool instead"
			}
		}
		return "not run: " + name + " is not a tool this session may call unchecked; use a listed tool instead"
	}
	return "not run: " + name + " was withheld (" + string(dec.Verdict) + "); change the call instead"
}

// money is " ($E; $F left)" with the report's estimate and free budget,
// or "" when they are unknown.
func money(r agent.Report) string {
	if r.EstimateUSD == "" || r.FreeUSD == "" {
		return ""
	}
	return " ($" + string(r.EstimateUSD) + "; $" + string(r.FreeUSD) + " left)"
}

func matched(dec *preflight.ToolCallDecision) string {
	if dec.MatchedCallID == "" {
		return ""
	}
	return " (call " + strconv.Quote(dec.MatchedCallID) + ")"
}

// issueList writes up to max issues as "path: message" separated by "; ".
func issueList(issues []preflight.Issue, max int) string {
	var b strings.Builder
	for i, is := range issues {
		if i == max {
			b.WriteString("; and " + strconv.Itoa(len(issues)-max) + " more")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		at := strings.TrimPrefix(is.Path, "/tool/request")
		if at == "" {
			at = "(arguments)"
		}
		b.WriteString(at + ": " + is.Message)
	}
	return b.String()
}
