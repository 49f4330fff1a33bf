package agent

import (
	"slices"

	"github.com/agentpreflight/preflight"
)

// UnsupportedPolicy says what [Guard.Call] does with a call whose operation
// the catalog lacks (advise / UNSUPPORTED_OPERATION): preflight cannot say
// whether it is wasteful, only that it does not know it.
type UnsupportedPolicy int

// The unsupported-operation policies. A policy that runs the call still
// runs it only when its estimate fits the free budget (RemainingUSD minus
// ReservedUSD, in-flight calls included).
const (
	// RunUnsupportedUnlessSimilar runs the call unless its operation is one
	// edit away from one in the catalog (the decision's issues then carry
	// similar_operation): "websearch" is most likely a typo of
	// "web_search", and running it would bypass every rule the correct name
	// gets. It is the zero value.
	RunUnsupportedUnlessSimilar UnsupportedPolicy = iota
	// RunUnsupported runs every call whose operation the catalog lacks.
	RunUnsupported
	// SkipUnsupported runs only operations in the catalog.
	SkipUnsupported
)

// runs reports whether the policy runs the unsupported call dec decided.
func (p UnsupportedPolicy) runs(dec *preflight.ToolCallDecision) bool {
	switch p {
	case RunUnsupported:
		return true
	case SkipUnsupported:
		return false
	}
	return !slices.ContainsFunc(dec.Issues, func(is preflight.Issue) bool { return is.Code == preflight.IssueSimilarOperation })
}

// isUnsupported reports whether dec is the answer for an operation the
// catalog lacks.
func isUnsupported(dec *preflight.ToolCallDecision) bool {
	return len(dec.ReasonCodes) > 0 && dec.ReasonCodes[0] == preflight.ReasonUnsupportedOperation
}
