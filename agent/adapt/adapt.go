// Package adapt is the kit every framework adapter of preflight is built
// from (agent/adkguard, agent/einoguard, agent/genkitguard, and the MCP
// guard for its messages): a named-tool session built from
// agent.AdapterOptions with the adapters' defaults, one guarded call with
// its outcome classified, and the one result a model reads instead of a
// tool's result when a call was not run.
//
// An adapter translates its framework's tool call into Call (or Begin,
// then Pending.End, for runtimes that run the tool between hooks) and
// hands the model Withheld.JSON or Withheld.Map when the call was
// withheld. A decision never reaches the model as an error: a withheld
// call is a normal tool result carrying the reason codes as data, and
// only the tool's own failure is returned as an error.
//
// adapt never runs a tool except through the run function it is given,
// never talks to a framework or the network, and keeps no state of its
// own: the budget, history and saved results live in the agent.Session.
package adapt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// DefaultTTLSeconds is the reuse window, in seconds, of tools whose spec
// and defaults give none: a byte-identical call within it is answered
// with the saved result instead of running again.
const DefaultTTLSeconds = "300"

// Classifier classifies a call that ran: result is what the tool returned
// (JSON), err its error.
type Classifier func(tool string, result []byte, err error) preflight.Outcome

// DefaultClassify classifies err with agent.ClassifyError; a result
// without an error is a success.
func DefaultClassify(_ string, _ []byte, err error) preflight.Outcome {
	return agent.ClassifyError(err)
}

// NewSession builds the session o describes (nil means the zero
// options), and returns it with o's classifier: specs with empty price,
// TTL and retry cap taken from Defaults (an empty TTL means
// DefaultTTLSeconds), an empty provider made agent.DefaultProvider; a nil
// Classify made DefaultClassify.
func NewSession(o *agent.AdapterOptions) (*agent.Session, Classifier, error) {
	var c agent.AdapterOptions
	if o != nil {
		c = *o
	}
	def := c.Defaults
	if def.TTLSeconds == "" {
		def.TTLSeconds = DefaultTTLSeconds
	}
	specs := make([]agent.ToolSpec, len(c.Specs))
	for i, s := range c.Specs {
		if s.PriceUSD == "" {
			s.PriceUSD = def.PriceUSD
		}
		if s.TTLSeconds == "" {
			s.TTLSeconds = def.TTLSeconds
		}
		if s.RetryCap == "" {
			s.RetryCap = def.RetryCap
		}
		if s.Operation.Provider == "" {
			s.Operation.Provider = agent.DefaultProvider
		}
		specs[i] = s
	}
	ts, err := agent.NewToolset(def, specs...)
	if err != nil {
		return nil, nil, err
	}
	s, err := agent.NewSession(ts, &c.Session)
	if err != nil {
		return nil, nil, err
	}
	classify := Classifier(c.Classify)
	if classify == nil {
		classify = DefaultClassify
	}
	return s, classify, nil
}

// Call guards one call of tool with raw JSON arguments args. run makes the
// real call and returns its result as JSON. The answer says how the call
// was answered; when it was not run, w is the result for the model. err is
// run's error, returned unchanged (the tool's own failure); a decision is
// never an error.
func Call(ctx context.Context, s *agent.Session, classify Classifier, tool string, args json.RawMessage,
	run func(context.Context) ([]byte, error)) (ans agent.Answer, w *Withheld, err error) {
	if classify == nil {
		classify = DefaultClassify
	}
	ans, err = s.Call(ctx, tool, args, func(ctx context.Context) ([]byte, preflight.Outcome, error) {
		b, err := run(ctx)
		return b, classify(tool, b, err), err
	})
	var pe *preflight.Error
	switch {
	case errors.As(err, &pe) && ans.Report.Decision == nil:
		return ans, NotEvaluated(tool, args, pe), nil
	case err != nil:
		return ans, nil, err
	case ans.How == agent.Withheld:
		return ans, Withhold(tool, ans), nil
	}
	return ans, nil, nil
}

// CallValue is Call for a tool whose result is a Go value, saved as its
// JSON. res is the call's result: run's own value when the call ran, the
// saved value decoded when it was reused or coalesced. When the call was
// not run, res is nil and w the result for the model. err is run's error
// (res nil), returned unchanged, or a saved result that does not decode.
// classify is given run's value (nil when run failed) and its JSON.
func CallValue[T any](ctx context.Context, s *agent.Session, classify func(tool string, res *T, result []byte, err error) preflight.Outcome,
	tool string, args json.RawMessage, run func(context.Context) (*T, error)) (res *T, w *Withheld, err error) {
	var fresh *T
	ans, w, err := Call(ctx, s, func(tool string, b []byte, err error) preflight.Outcome {
		return classify(tool, fresh, b, err)
	}, tool, args, func(ctx context.Context) ([]byte, error) {
		v, err := run(ctx)
		if err != nil {
			return nil, err
		}
		fresh = v
		return json.Marshal(v)
	})
	switch {
	case err != nil:
		return nil, nil, err
	case w != nil:
		return nil, w, nil
	case ans.How == agent.Ran:
		return fresh, nil, nil
	}
	var saved T
	if err := json.Unmarshal(ans.Result, &saved); err != nil {
		return nil, nil, err
	}
	return &saved, nil, nil
}

// Begin is the first half of Call, for runtimes with before and after
// hooks: a non-nil Pending means run the call, then end it; otherwise the
// answer is the reused or coalesced result, or w the result for the model.
// An error is a context done.
func Begin(ctx context.Context, s *agent.Session, tool string, args json.RawMessage) (p *agent.Pending, ans agent.Answer, w *Withheld, err error) {
	p, ans, err = s.Begin(ctx, tool, args)
	var pe *preflight.Error
	switch {
	case errors.As(err, &pe):
		return nil, ans, NotEvaluated(tool, args, pe), nil
	case err != nil || p != nil:
		return p, ans, nil, err
	case ans.How == agent.Withheld:
		return nil, ans, Withhold(tool, ans), nil
	}
	return nil, ans, nil, nil
}

// Withheld is what a model reads instead of a tool's result when the call
// was not run: Error is the sentence saying why and what to do instead,
// Preflight the decision behind it.
//
// Its JSON is {"error": "...", "preflight": {"tool": ..., "decision": ...,
// "enforcement": ..., "reasonCodes": [...], "matchedCallId": ...,
// "issues": [...]}}; reasonCodes and issues are arrays, never null.
type Withheld struct {
	// Error says why the call was not run and what to do instead.
	Error string `json:"error"`
	// Preflight is the decision behind it.
	Preflight Decision `json:"preflight"`
}

// Decision is preflight's decision on a withheld call.
type Decision struct {
	// Tool is the name of the tool that was not run.
	Tool string `json:"tool"`
	// Decision is empty when the arguments could not be evaluated (then
	// Issues say why).
	Decision preflight.Verdict `json:"decision,omitempty"`
	// Enforcement is the decision's enforcement; empty with Decision.
	Enforcement preflight.Enforcement `json:"enforcement,omitempty"`
	// ReasonCodes are the decision's reason codes, led by
	// BUDGET_EXCEEDED when the call does not fit the budget (see
	// ReasonCodes).
	ReasonCodes []preflight.ReasonCode `json:"reasonCodes"`
	// MatchedCallID is the earlier call this one repeats, if any.
	MatchedCallID string `json:"matchedCallId,omitempty"`
	// Issues are the problems found in the call's arguments.
	Issues []preflight.Issue `json:"issues"`
}

// Withhold is the result for the model of a call of tool that ans says
// was withheld (ans.How == agent.Withheld).
func Withhold(tool string, ans agent.Answer) *Withheld {
	d := ans.Report.Decision
	w := &Withheld{Error: ans.Message, Preflight: Decision{Tool: tool, Decision: d.Verdict, Enforcement: d.Enforcement,
		ReasonCodes: ReasonCodes(ans.Report), MatchedCallID: d.MatchedCallID, Issues: d.Issues}}
	w.fill()
	return w
}

// ReasonCodes are the reason codes to report for a call the guard did not
// run: the decision's, led by preflight.ReasonBudgetExceeded when the call was not run
// because its estimated cost does not fit the budget (rep.OverBudget).
func ReasonCodes(rep agent.Report) []preflight.ReasonCode {
	if rep.OverBudget {
		return append([]preflight.ReasonCode{preflight.ReasonBudgetExceeded}, rep.Decision.ReasonCodes...)
	}
	return rep.Decision.ReasonCodes
}

// NotEvaluated is the result for the model of a call of tool with args
// that preflight could not evaluate (e): no decision, the issues of e, and
// NotEvaluatedMessage as the error.
func NotEvaluated(tool string, args json.RawMessage, e *preflight.Error) *Withheld {
	w := &Withheld{Error: NotEvaluatedMessage(tool, args, e), Preflight: Decision{Tool: tool, Issues: e.Details}}
	w.fill()
	return w
}

// Where preflight's issues point in the request it decides: the tool name
// and the arguments.
const (
	namePath = "/tool/operation"
	argsPath = "/tool/request"
)

// NotEvaluatedMessage says what is wrong with a call of tool with args
// that preflight could not evaluate (e), in the caller's terms: the tool
// name, or the arguments with a pointer into them.
func NotEvaluatedMessage(tool string, args json.RawMessage, e *preflight.Error) string {
	var first preflight.Issue
	if len(e.Details) > 0 {
		first = e.Details[0]
	}
	q := strconv.Quote(tool)
	switch {
	case first.Path == namePath && tool == "":
		return "not run: the call names no tool (params.name is missing or empty); send the name of a listed tool instead"
	case first.Path == namePath:
		return "not run: the tool name " + q + " could not be checked (" + first.Message + "); send the name of a listed tool instead"
	case first.Path == argsPath && first.Code == "type":
		return "not run: the arguments of " + q + " are not a JSON object (found " + kindOf(args) + "); send the arguments as one JSON object instead"
	case strings.HasPrefix(first.Path, argsPath+"/") || first.Path == argsPath:
		at := strings.TrimPrefix(first.Path, argsPath)
		if at == "" {
			at = "the arguments"
		}
		return "not run: the arguments of " + q + " could not be checked (" + at + ": " + first.Message + "); fix the arguments and call it again instead"
	}
	return "not run: the call of " + q + " could not be checked (" + e.Message + "); fix the call and send it again instead"
}

// kindOf names the kind of JSON value v is, with its article.
func kindOf(v json.RawMessage) string {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "an object"
	}
	return "a number"
}

func (w *Withheld) fill() {
	if w.Preflight.ReasonCodes == nil {
		w.Preflight.ReasonCodes = []preflight.ReasonCode{}
	}
	if w.Preflight.Issues == nil {
		w.Preflight.Issues = []preflight.Issue{}
	}
}

// JSON returns w as a JSON object.
func (w *Withheld) JSON() []byte {
	b, _ := json.Marshal(w) // plain strings and slices: cannot fail
	return b
}

// Map returns w as the JSON object a map-typed tool result carries.
func (w *Withheld) Map() map[string]any {
	var m map[string]any
	json.Unmarshal(w.JSON(), &m)
	return m
}
