// Package adapt is the kit every framework adapter of preflight is built
// from (agent/adkguard, agent/einoguard, agent/genkitguard, and
// agent/mcpguard for its messages): the flat Options an adapter takes, a
// named-tool session (agent/tools) built from them with the adapters'
// defaults, one guarded call with its outcome classified, and the one
// result a model reads instead of a tool's result when a call was not run.
//
// An adapter translates its framework's tool call into Call (or Start,
// then Finish, for runtimes that run the tool between hooks) and hands
// the model Withheld.JSON or Withheld.Map when the call was withheld. A
// call whose context ends while it runs (a cancelled run, a deadline) is
// a transient failure, never reused (see Finish). A decision never reaches the model as an error: a withheld
// call is a normal tool result carrying the reason codes as data, and only
// the tool's own failure is returned as an error.
//
// The default classification (DefaultClassify) reads the failures the
// frameworks' own error idioms put into a result (InBand); Pause marks an
// interrupted call, whose reservation is given back; CallIDs names calls
// for the model by the framework's call ids.
//
// adapt never runs a tool except through the run function it is given,
// never talks to a framework or the network, and keeps no state of its
// own: the budget, history and saved results live in the tools.Session,
// the call ids in the adapter's CallIDs.
// It uses only the public API of agent and agent/tools.
package adapt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
)

// DefaultTTLSeconds is the reuse window, in seconds, of tools whose spec
// and defaults give none: a byte-identical call within it is answered
// with the saved result instead of running again.
const DefaultTTLSeconds = "300"

// Options configures the guard of an agent-framework adapter, flat: each
// adapter's Options is this type (agent/adkguard, agent/einoguard,
// agent/genkitguard) or carries these fields (agent/mcpguard, whose
// options are those of each MCP session), and each says what a tool's
// result is in its framework. The zero value and nil both work.
type Options struct {
	// BudgetUSD, when non-empty, is the session's budget: see
	// agent.GuardOptions.BudgetUSD. Empty means no budget of the
	// session's own (every call is decided against 1,000,000,000).
	BudgetUSD json.Number
	// MaxCalls, when positive, is the session's call limit (see
	// agent.GuardOptions.MaxCalls).
	MaxCalls int
	// Advise is the policy for reduce-scope advice. Zero means
	// agent.RunAdvised.
	Advise agent.AdvisePolicy
	// Unsupported is the policy for tools without a spec, which are
	// decided as operations the catalog lacks. Zero means
	// agent.RunUnsupportedUnlessSimilar.
	Unsupported agent.UnsupportedPolicy
	// NoCoalesce turns off coalescing of identical calls in flight.
	NoCoalesce bool
	// LedgerStore keeps the session's money (and, without a Ledger, its
	// history). Nil means an in-process store of the session's own. See
	// agent.GuardOptions.Store.
	LedgerStore agent.LedgerStore
	// Lease is how long a call's reservation outlives a worker that died
	// during the call, on a LedgerStore shared by processes; zero means
	// the store's default.
	Lease time.Duration
	// Ledger is where outcomes are recorded. Nil means a new one (on
	// LedgerStore when it is set).
	Ledger *agent.Ledger
	// Results keeps the tools' results for reuse and coalescing. Nil
	// means a tools.NewMemoryResultStore(0, 0) of the session's own; see
	// tools.SessionOptions.Results.
	Results tools.ResultStore
	// RunID names the run in every proposal. Empty means "session".
	RunID string
	// Specs give per tool name its catalog entry (input schema, effects:
	// only a read-only tool is ever reused or coalesced), price, TTL and
	// retry cap. Empty PriceUSD, TTLSeconds and RetryCap are taken from
	// Defaults; an empty Provider is tools.DefaultProvider.
	Specs []tools.Spec
	// Defaults gives the price, TTL and retry cap of tools without a spec,
	// which are decided as operations the catalog lacks (see
	// Unsupported) unless the adapter derives their specs from its
	// framework (see Derived); Defaults.Operation.Effects is then the
	// effects of those tools (zero: side-effecting, never reused). An
	// empty TTLSeconds means DefaultTTLSeconds.
	Defaults tools.Spec
	// Classify classifies a call that ran from its result (JSON, or the
	// tool's text: the adapter says which) and its error. Nil means
	// DefaultClassify.
	Classify Classifier
	// InterruptOnDefer makes a call deferred for the budget or the call
	// limit the framework's interrupt, instead of a result the model
	// reads, where the framework's runs pause and resume (agent/genkitguard:
	// a tool interrupt; agent/einoguard: tool.Interrupt): a person may
	// raise the budget (agent.Guard.RaiseBudget) and resume the run, and
	// the call is then decided again. An adapter whose framework has no
	// such pause refuses it (agent/adkguard, the LangChainGo, mcp-go,
	// Anthropic and OpenAI adapters).
	InterruptOnDefer bool
}

// SessionOptions returns the tools.SessionOptions o describes (nil means
// the zero options): its guard, result store, run id and ledger.
func (o *Options) SessionOptions() tools.SessionOptions {
	if o == nil {
		return tools.SessionOptions{}
	}
	return tools.SessionOptions{
		Guard: agent.GuardOptions{
			Advise: o.Advise, Unsupported: o.Unsupported,
			BudgetUSD: o.BudgetUSD, MaxCalls: o.MaxCalls, NoCoalesce: o.NoCoalesce,
			Store: o.LedgerStore, Lease: o.Lease,
		},
		Results: o.Results,
		RunID:   o.RunID,
		Ledger:  o.Ledger,
	}
}

// Classifier classifies a call that ran: result is what the tool returned
// (JSON), err its error.
type Classifier func(tool string, result []byte, err error) preflight.Outcome

// DefaultClassify classifies err with agent.ClassifyError; a result
// without an error is a failure when it carries one in band (see
// [InBand]: the frameworks' own ways of handing a tool's error to the
// model as its result), and a success otherwise. A failure is never saved
// for reuse.
func DefaultClassify(_ string, result []byte, err error) preflight.Outcome {
	if err != nil {
		return agent.ClassifyError(err)
	}
	if o, ok := InBand(result); ok {
		return o
	}
	return preflight.OutcomeSuccess
}

// NewSession builds the session o describes (nil means the zero
// options), and returns it with o's classifier: specs with empty price,
// TTL and retry cap taken from Defaults (an empty TTL means
// DefaultTTLSeconds), an empty provider made tools.DefaultProvider; a nil
// Classify made DefaultClassify.
func NewSession(o *Options) (*tools.Session, Classifier, error) {
	var c Options
	if o != nil {
		c = *o
	}
	def := c.Defaults
	if def.TTLSeconds == "" {
		def.TTLSeconds = DefaultTTLSeconds
	}
	specs := make([]tools.Spec, len(c.Specs))
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
			s.Operation.Provider = tools.DefaultProvider
		}
		specs[i] = s
	}
	set, err := tools.NewSet(def, specs...)
	if err != nil {
		return nil, nil, err
	}
	so := c.SessionOptions()
	s, err := tools.NewSession(set, &so)
	if err != nil {
		return nil, nil, err
	}
	classify := c.Classify
	if classify == nil {
		classify = DefaultClassify
	}
	return s, classify, nil
}

// Call guards one call of tool with raw JSON arguments args. run makes the
// real call and returns its result as JSON. The answer says how the call
// was answered; when it was not run, w is the result for the model. err is
// run's error, returned unchanged (the tool's own failure; see Pause for
// an interrupted call); a decision is never an error.
func Call(ctx context.Context, s *tools.Session, classify Classifier, tool string, args json.RawMessage,
	run func(context.Context) ([]byte, error)) (ans tools.Answer, w *Withheld, err error) {
	if classify == nil {
		classify = DefaultClassify
	}
	if w := unapproved(ctx, s, tool, args); w != nil {
		return tools.Answer{How: tools.HowWithheld, Message: w.Error}, w, nil
	}
	p, ans, err := s.Start(ctx, tool, args)
	if p != nil {
		defer p.Release() // after Finish a no-op; on a panic in run it frees the reservation
		b, rerr := run(ctx)
		var ps *paused
		if errors.As(rerr, &ps) {
			p.Release()
			return ans, nil, ps.err
		}
		ans, err = Finish(ctx, p, b, classify(tool, b, rerr), rerr)
	}
	var pe *preflight.Error
	switch {
	case errors.As(err, &pe) && ans.Report.Decision == nil:
		return ans, NotEvaluated(tool, args, pe), nil
	case err != nil:
		return ans, nil, err
	case ans.How == tools.HowWithheld:
		w := Withhold(tool, ans)
		rename(ctx, w, ans)
		return ans, w, nil
	}
	return ans, nil, nil
}

// Finish ends p, a call Start let run, with what the tool returned: its
// result b (JSON) and err, classified as outcome (see
// tools.Running.Finish), and notes the framework's call id ctx carries
// (Ran). It returns the call's answer and err unchanged (joined with a
// recording error, if any).
//
// A call whose context ended while it ran (the framework cancelled the
// run, a deadline passed) is a transient failure whatever the tool
// returned, since its result may have been cut short: it is never saved
// for reuse nor handed to identical calls waiting on it (they decide
// again), and its estimate stays counted, since the tool was started. A
// result it returned anyway is still the answer's, for the framework.
func Finish(ctx context.Context, p *tools.Running, b []byte, outcome preflight.Outcome, err error) (tools.Answer, error) {
	if err == nil && ctx.Err() != nil {
		ans, _ := p.Finish(ctx, b, preflight.OutcomeTransientFailure, context.Cause(ctx))
		return tools.Answer{How: tools.HowRan, Result: b, Outcome: preflight.OutcomeTransientFailure, Report: ans.Report}, nil
	}
	ans, err := p.Finish(ctx, b, outcome, err)
	Ran(ctx, ans)
	return ans, err
}

// Pause marks err, the error of Call's run function, as a call that was
// interrupted before it did its work: a confirmation or approval asked
// for, a framework's interrupt. Call then gives the call's reservation
// back (it is neither a failure nor a charge, and the call resumed later
// is decided and charged as a new one, never deferred by its own earlier
// reservation) and returns err itself, unwrapped. Pause(nil) is nil.
func Pause(err error) error {
	if err == nil {
		return nil
	}
	return &paused{err}
}

type paused struct{ err error }

func (p *paused) Error() string { return p.err.Error() }
func (p *paused) Unwrap() error { return p.err }

// CallValue is Call for a tool whose result is a Go value, saved as its
// JSON. res is the call's result: run's own value when the call ran, the
// saved value decoded when it was reused or coalesced. When the call was
// not run, res is nil and w the result for the model. err is run's error
// (res nil), returned unchanged, or a saved result that does not decode.
// classify is given run's value (nil when run failed) and its JSON.
func CallValue[T any](ctx context.Context, s *tools.Session, classify func(tool string, res *T, result []byte, err error) preflight.Outcome,
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
	case ans.How == tools.HowRan:
		return fresh, nil, nil
	}
	var saved T
	if err := json.Unmarshal(ans.Result, &saved); err != nil {
		return nil, nil, err
	}
	return &saved, nil, nil
}

// Start is the first half of Call, for runtimes with before and after
// hooks (tools.Session.Start): a non-nil Running means run the call, then
// finish it; otherwise the answer is the reused or coalesced result, or w
// the result for the model. An error is a context done.
func Start(ctx context.Context, s *tools.Session, tool string, args json.RawMessage) (p *tools.Running, ans tools.Answer, w *Withheld, err error) {
	if w := unapproved(ctx, s, tool, args); w != nil {
		return nil, tools.Answer{How: tools.HowWithheld, Message: w.Error}, w, nil
	}
	p, ans, err = s.Start(ctx, tool, args)
	var pe *preflight.Error
	switch {
	case errors.As(err, &pe):
		return nil, ans, NotEvaluated(tool, args, pe), nil
	case err != nil || p != nil:
		return p, ans, nil, err
	case ans.How == tools.HowWithheld:
		w := Withhold(tool, ans)
		rename(ctx, w, ans)
		return nil, ans, w, nil
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
	// agent.Report.ReasonCodes).
	ReasonCodes []preflight.ReasonCode `json:"reasonCodes"`
	// MatchedCallID is the earlier call this one repeats, if any.
	MatchedCallID string `json:"matchedCallId,omitempty"`
	// Issues are the problems found in the call's arguments.
	Issues []preflight.Issue `json:"issues"`
	// Approval says why a call whose tool needs a person's approval
	// (tools.Spec.Approval) was not run: "unavailable" when the adapter
	// cannot ask (its framework has no pause for a person), "declined",
	// "invalid", "expired" (see Approvals.Answer). Decision is then
	// empty.
	Approval string `json:"approval,omitempty"`
}

// unapproved returns the result of a call of tool with args that needs a
// person's approval (see tools.Set.Consent) and was not approved (ctx
// carries no accepted Approvals.Answer for it not taken yet); nil when
// the call needs none or was approved.
func unapproved(ctx context.Context, s *tools.Session, tool string, args json.RawMessage) *Withheld {
	c := s.Tools().Consent(tool, args)
	if !c.Needed || take(ctx, s, tool, args) {
		return nil
	}
	w := &Withheld{Error: "not run: " + tool + " needs a person's approval (" + c.Reason + "), which this adapter cannot ask; " +
		"it is not run unapproved: remove its approval policy or guard it where approvals are asked (the ADK, Genkit and eino adapters, an MCP guard's Session, preflightd proxy) instead",
		Preflight: Decision{Tool: tool, Approval: "unavailable"}}
	w.fill()
	return w
}

// Withhold is the result for the model of a call of tool that ans says
// was withheld (ans.How == tools.HowWithheld).
func Withhold(tool string, ans tools.Answer) *Withheld {
	d := ans.Report.Decision
	w := &Withheld{Error: ans.Message, Preflight: Decision{Tool: tool, Decision: d.Verdict, Enforcement: d.Enforcement,
		ReasonCodes: ans.Report.ReasonCodes(), MatchedCallID: d.MatchedCallID, Issues: d.Issues}}
	w.fill()
	return w
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
