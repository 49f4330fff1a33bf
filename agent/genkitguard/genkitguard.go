package genkitguard

import (
	"context"
	"encoding/json"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/firebase/genkit/go/ai"
)

// MiddlewareName is the name the guard reports as an ai.Middleware.
const MiddlewareName = "preflight"

// Options configures a [Guard]. The zero value and nil both work.
//
// Session, Specs, Defaults and Classify mean what they mean in
// [agent.AdapterOptions], the options of every agent-framework adapter;
// InterruptOnDefer is Genkit's own.
type Options struct {
	// Session configures the session (see agent.AdapterOptions.Session).
	Session agent.SessionOptions
	// Specs give per tool name its catalog entry, price, TTL and retry cap
	// (see agent.AdapterOptions.Specs).
	Specs []agent.ToolSpec
	// Defaults gives the price, TTL and retry cap of tools without a spec
	// (see agent.AdapterOptions.Defaults).
	Defaults agent.ToolSpec
	// Classify classifies a call that ran from its output (the
	// response's Output as JSON) and its error. Nil means
	// agent.ClassifyError(err).
	Classify func(tool string, result []byte, err error) preflight.Outcome
	// InterruptOnDefer makes a call deferred for the budget or the call
	// limit a Genkit interrupt (see the package documentation) instead of
	// a tool response the model reads.
	InterruptOnDefer bool
}

// Guard is an ai.Middleware guarding tool calls. It is safe for
// concurrent use.
type Guard struct {
	s         *agent.Session
	classify  adapt.Classifier
	interrupt bool
}

var _ ai.Middleware = (*Guard)(nil)

// New returns a guard. It fails when an option is malformed: a spec the
// catalog refuses, or a budget that is not a decimal.
func New(opts *Options) (*Guard, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s, c, err := adapt.NewSession(&agent.AdapterOptions{Session: o.Session, Specs: o.Specs, Defaults: o.Defaults, Classify: o.Classify})
	if err != nil {
		return nil, err
	}
	return &Guard{s: s, classify: c, interrupt: o.InterruptOnDefer}, nil
}

// Session returns the guard's session: its ledger, and the money spent
// (Session().Guard().SpentUSD()).
func (g *Guard) Session() *agent.Session { return g.s }

// Name returns MiddlewareName.
func (g *Guard) Name() string { return MiddlewareName }

// New returns the hooks of one Generate: a WrapTool guarding each tool
// call with the guard's session.
func (g *Guard) New(context.Context) (*ai.Hooks, error) {
	return &ai.Hooks{WrapTool: g.wrapTool}, nil
}

func (g *Guard) wrapTool(ctx context.Context, p *ai.ToolParams, next ai.ToolNext) (*ai.MultipartToolResponse, error) {
	name := p.Request.Name
	args, err := json.Marshal(p.Request.Input)
	if err != nil {
		args = []byte("null") // a value JSON cannot carry: decided as no arguments
	}
	res, w, err := adapt.CallValue(ctx, g.s, g.classifyResponse, name, args, func(ctx context.Context) (*ai.MultipartToolResponse, error) {
		return next(ctx, p)
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
