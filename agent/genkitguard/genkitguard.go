package genkitguard

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/firebase/genkit/go/ai"
)

// MiddlewareName is the name the guard reports as an ai.Middleware.
const MiddlewareName = "preflight"

// Options configures a [Guard]. The zero value and nil both work.
//
// Its fields but InterruptOnDefer are those of [adapt.Options], the
// options of every agent-framework adapter, and mean what they mean there;
// InterruptOnDefer is Genkit's own. Classify is given the response's
// Output as JSON.
type Options struct {
	// BudgetUSD, when non-empty, is the session's budget.
	BudgetUSD json.Number
	// MaxCalls, when positive, is the session's call limit.
	MaxCalls int
	// Advise is the policy for reduce-scope advice.
	Advise agent.AdvisePolicy
	// Unsupported is the policy for tools without a spec.
	Unsupported agent.UnsupportedPolicy
	// NoCoalesce turns off coalescing of identical calls in flight.
	NoCoalesce bool
	// LedgerStore keeps the session's money (and, without a Ledger, its
	// history); nil means an in-process store.
	LedgerStore agent.LedgerStore
	// Lease is how long a call's reservation outlives a worker that died
	// during the call, on a LedgerStore shared by processes.
	Lease time.Duration
	// Ledger is where outcomes are recorded; nil means a new one.
	Ledger *agent.Ledger
	// Results keeps the tools' results for reuse and coalescing; nil
	// means a store of the session's own.
	Results tools.ResultStore
	// RunID names the run in every proposal. Empty means "session".
	RunID string
	// Specs give per tool name its catalog entry, price, TTL and retry cap.
	Specs []tools.Spec
	// Defaults gives the price, TTL and retry cap of tools without a spec,
	// and in Operation.Effects the effects of those tools (see "Without
	// specs" in the package documentation).
	Defaults tools.Spec
	// Classify classifies a call that ran from its output (the
	// response's Output as JSON) and its error. Nil means
	// adapt.DefaultClassify: an error by agent.ClassifyError, an output
	// {"error": …} as a failure (adapt.InBand).
	Classify adapt.Classifier
	// InterruptOnDefer makes a call deferred for the budget or the call
	// limit a Genkit interrupt (see the package documentation) instead of
	// a tool response the model reads.
	InterruptOnDefer bool
}

// adapt returns o as the options of every adapter.
func (o *Options) adapt() adapt.Options {
	return adapt.Options{
		BudgetUSD: o.BudgetUSD, MaxCalls: o.MaxCalls, Advise: o.Advise, Unsupported: o.Unsupported,
		NoCoalesce: o.NoCoalesce, LedgerStore: o.LedgerStore, Lease: o.Lease, Ledger: o.Ledger,
		Results: o.Results, RunID: o.RunID, Specs: o.Specs, Defaults: o.Defaults, Classify: o.Classify,
	}
}

// Guard is an ai.Middleware guarding tool calls. It is safe for
// concurrent use.
type Guard struct {
	s         *tools.Session
	classify  adapt.Classifier
	interrupt bool
	opts      adapt.Options
	derived   adapt.Derived // the tools' specs taken from their definitions
	ids       adapt.CallIDs // the tool request refs calls ran as
}

var _ ai.Middleware = (*Guard)(nil)

// New returns a guard. It fails when an option is malformed: a spec the
// catalog refuses, or a budget that is not a decimal.
func New(opts *Options) (*Guard, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	ao := o.adapt()
	s, c, err := adapt.NewSession(&ao)
	if err != nil {
		return nil, err
	}
	return &Guard{s: s, classify: c, interrupt: o.InterruptOnDefer, opts: ao}, nil
}

// Session returns the guard's session: its ledger, and the money spent
// (Session().Guard().SpentUSD(ctx)).
func (g *Guard) Session() *tools.Session { return g.s }

// Name returns MiddlewareName.
func (g *Guard) Name() string { return MiddlewareName }

// New returns the hooks of one Generate: a WrapTool guarding each tool
// call with the guard's session.
func (g *Guard) New(context.Context) (*ai.Hooks, error) {
	return &ai.Hooks{WrapTool: g.wrapTool}, nil
}

func (g *Guard) wrapTool(ctx context.Context, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
	name := p.Request.Name
	op := preflight.Operation{Name: name}
	if p.Tool != nil {
		if d := p.Tool.Definition(); d != nil {
			op.Schema = adapt.SchemaOf(d.InputSchema)
		}
	}
	g.derived.Add(g.s, &g.opts, op) // fails only on specs New accepted
	args, err := json.Marshal(p.Request.Input)
	if err != nil {
		args = []byte("null") // a value JSON cannot carry: decided as no arguments
	}
	res, w, err := adapt.CallValue(adapt.WithCallID(ctx, &g.ids, p.Request.Ref), g.s, g.classifyResponse, name, args, func(ctx context.Context) (*ai.MultipartToolResponse, error) {
		res, err := next(ctx, p)
		if ok, _ := ai.IsToolInterruptError(err); ok {
			return nil, adapt.Pause(err) // neither a failure nor a charge
		}
		return res, err
	})
	if w != nil {
		if g.interrupt && w.Preflight.Decision == preflight.VerdictDefer {
			return nil, ai.NewToolInterruptError(w.Map())
		}
		return &ai.MultipartToolResponse{Output: w.Map()}, nil
	}
	return res, err
}

// classifyResponse classifies a call by its response's Output as JSON.
func (g *Guard) classifyResponse(tool string, res *ai.MultipartToolResponse, _ []byte, err error) preflight.Outcome {
	var out []byte
	if res != nil {
		out, _ = json.Marshal(res.Output) // it was just marshaled whole
	}
	return g.classify(tool, out, err)
}
