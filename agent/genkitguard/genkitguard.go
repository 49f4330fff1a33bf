package genkitguard

import (
	"context"
	"encoding/json"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/firebase/genkit/go/ai"
)

// MiddlewareName is the name the guard reports as an ai.Middleware.
const MiddlewareName = "preflight"

// Options configures a [Guard]: its session, its tools' specs and how
// the outcome of a call that ran is classified (the fields are documented
// on [adapt.Options]). Classify is given the response's Output as JSON;
// nil means adapt.DefaultClassify: an error by agent.ClassifyError, an
// output {"error": …} as a failure (adapt.InBand). InterruptOnDefer makes
// a call deferred for the budget or the call limit a Genkit interrupt
// (see the package documentation) instead of a tool response the model
// reads. The zero value and nil both work.
type Options = adapt.Options

// Guard is an ai.Middleware guarding tool calls. It is safe for
// concurrent use.
type Guard struct {
	s         *tools.Session
	classify  adapt.Classifier
	interrupt bool
	opts      Options
	derived   adapt.Derived // the tools' specs taken from their definitions
	ids       adapt.CallIDs // the tool request refs calls ran as
	approvals adapt.Approvals
}

var _ ai.Middleware = (*Guard)(nil)

// New returns a guard. It fails when an option is malformed: a spec the
// catalog refuses, or a budget that is not a decimal.
func New(opts *Options) (*Guard, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s, c, err := adapt.NewSession(&o)
	if err != nil {
		return nil, err
	}
	return &Guard{s: s, classify: c, interrupt: o.InterruptOnDefer, opts: o}, nil
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
	cctx, asked, w := g.approval(adapt.WithCallID(ctx, &g.ids, p.Request.Ref), p.Request, args)
	switch {
	case asked != nil:
		return nil, ai.NewToolInterruptError(asked)
	case w != nil:
		return &ai.MultipartToolResponse{Output: w.Map()}, nil
	}
	res, w, err := adapt.CallValue(cctx, g.s, g.classifyResponse, name, args, func(ctx context.Context) (*ai.MultipartToolResponse, error) {
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

// ApprovalKey is the member of the resumed metadata of a restarted call
// (ai.WithResumedMetadata) that carries a person's answer to the guard's
// approval interrupt: true runs the call once, anything else nothing.
const ApprovalKey = "approve"

// approval asks, with a Genkit tool interrupt, a person to approve a call
// that needs it (tools.Spec.Approval), or takes the answer a restarted
// call carries. It returns the interrupt's metadata (the approval asked),
// or w, the call's result when it is not run, or the context to decide it
// under.
func (g *Guard) approval(ctx context.Context, req *ai.ToolRequest, args json.RawMessage) (context.Context, map[string]any, *adapt.Withheld) {
	if !g.s.Tools().Consent(req.Name, args).Needed {
		return ctx, nil, nil
	}
	if !ai.IsToolResumed(ctx) {
		ap, w := g.approvals.AskFor(req.Ref, g.s, req.Name, args)
		if w != nil {
			return ctx, nil, w
		}
		b, _ := json.Marshal(ap) // strings and valid JSON: cannot fail
		var m map[string]any
		json.Unmarshal(b, &m)
		m["message"] = ap.Message()
		return ctx, m, nil
	}
	ticket := g.approvals.TicketFor(req.Ref)
	if t, ok := ai.ResumedValue[string](ctx, "ticket"); ok && t != "" {
		ticket = t
	}
	yes, _ := ai.ResumedValue[bool](ctx, ApprovalKey)
	actx, _, w := g.approvals.Answer(ctx, g.s, ticket, req.Name, args, yes)
	return actx, nil, w
}

// classifyResponse classifies a call by its response's Output as JSON.
func (g *Guard) classifyResponse(tool string, res *ai.MultipartToolResponse, _ []byte, err error) preflight.Outcome {
	var out []byte
	if res != nil {
		out, _ = json.Marshal(res.Output) // it was just marshaled whole
	}
	return g.classify(tool, out, err)
}
