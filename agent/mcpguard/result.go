package mcpguard

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Withheld is the decision a withheld call's result carries, in _meta
// under MetaKey and, unless the tool declares an outputSchema (which
// clients check structuredContent against, even on isError), in
// structuredContent under "preflight".
type Withheld struct {
	// Tool is the name of the tool that was not run.
	Tool string `json:"tool"`
	// Decision, Enforcement, ReasonCodes, MatchedCallID and Issues are
	// preflight's decision; Decision is empty when the arguments could not
	// be evaluated (then Issues say why). A repeat that Session.CallTool
	// does not run because the identical call's outcome is unknown, or its
	// result is no longer held, has Decision block and no reason codes;
	// Message says which.
	Decision      preflight.Verdict      `json:"decision,omitempty"`
	Enforcement   preflight.Enforcement  `json:"enforcement,omitempty"`
	ReasonCodes   []preflight.ReasonCode `json:"reasonCodes"`
	MatchedCallID string                 `json:"matchedCallId,omitempty"`
	Issues        []preflight.Issue      `json:"issues"`
	// Approval, for a call not run for want of a person's approval (see
	// Approvals), says why: "declined" (the answer was not an accept with
	// approve true), "invalid" (a requestState the guard did not give for
	// this call, principal and run), "expired", "used" (the approval ran
	// its call already) or "unavailable" (it could not be asked). The
	// call was not decided: Decision is empty.
	Approval string `json:"approval,omitempty"`
	// Message is the text block of the result.
	Message string `json:"message"`
}

// withheld is the result of a call the guard did not run. structured
// false leaves structuredContent out, for a tool with an outputSchema
// (clients validate structuredContent against it, even on isError).
func withheld(ans tools.Answer, tool string, structured bool) *mcp.CallToolResult {
	return fromAdapt(adapt.Withhold(tool, ans)).result(structured)
}

// notEvaluated is the result of a call of tool with args that preflight
// could not evaluate (no tool name, arguments that are not a JSON object
// or over a limit).
func notEvaluated(e *preflight.Error, tool string, args json.RawMessage, structured bool) *mcp.CallToolResult {
	return fromAdapt(adapt.NotEvaluated(tool, args, e)).result(structured)
}

// fromAdapt is the decision of w, the withheld-call result every adapter
// gives, in the MCP guard's shape: the decision's members with the message
// among them rather than beside them.
func fromAdapt(w *adapt.Withheld) Withheld {
	d := w.Preflight
	return Withheld{Tool: d.Tool, Decision: d.Decision, Enforcement: d.Enforcement, ReasonCodes: d.ReasonCodes,
		MatchedCallID: d.MatchedCallID, Issues: d.Issues, Message: w.Error}
}

func (w Withheld) result(structured bool) *mcp.CallToolResult {
	if w.Issues == nil {
		w.Issues = []preflight.Issue{}
	}
	// As JSON values, so a client-side caller sees what the wire carries.
	b, _ := json.Marshal(w)
	var v map[string]any
	json.Unmarshal(b, &v)
	res := &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: w.Message}},
		Meta:    mcp.Meta{MetaKey: v},
	}
	if structured {
		res.StructuredContent = map[string]any{"preflight": v}
	}
	return res
}

// Classify is the default outcome classifier of an MCP tool call: err, when
// not nil, is classified by agent.ClassifyError, except that a JSON-RPC
// invalid-params error (the arguments broke the tool's schema) is
// terminal. A result with isError is a failure: transient when its text
// mentions a timeout, a rate limit, "429", a 5xx status or temporary
// unavailability; terminal otherwise. Any other result is a success.
func Classify(res *mcp.CallToolResult, err error) preflight.Outcome {
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
			return preflight.OutcomeTerminalFailure
		}
		return agent.ClassifyError(err)
	}
	if res == nil || !res.IsError {
		return preflight.OutcomeSuccess
	}
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(strings.ToLower(t.Text))
			text.WriteByte(' ')
		}
	}
	if transientText(text.String()) {
		return preflight.OutcomeTransientFailure
	}
	return preflight.OutcomeTerminalFailure
}

var transientWords = []string{"timeout", "timed out", "deadline exceeded", "rate limit", "rate-limit",
	"too many requests", "temporarily", "temporary", "unavailable", "try again", "overloaded"}

// transientStatus matches an HTTP status of a transient failure standing
// alone: 408, 425, 429 or 5xx.
var transientStatus = regexp.MustCompile(`(^|[^0-9.-])(408|425|429|5[0-9][0-9])($|[^0-9.])`)

func transientText(s string) bool {
	for _, w := range transientWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return transientStatus.MatchString(s)
}
