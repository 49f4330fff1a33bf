package adkguard

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"reflect"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	adkagent "google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
)

// PluginName is the name of the plugin Guard.Plugin returns.
const PluginName = "preflight"

// Options configures a [Guard]: its session, its tools' specs and how
// the outcome of a call that ran is classified (the fields are documented
// on [adapt.Options]). Classify is given the function response as
// JSON, and the tool's own error even when an error callback (such as
// plugin/retryandreflect) turned it into a response. InterruptOnDefer is
// refused: ADK pauses a run only for a tool's own confirmation
// (RequireConfirmation), which a callback cannot ask for. The zero value
// and nil both work.
type Options = adapt.Options

// Guard guards the tool calls of one ADK run. It is safe for concurrent
// use.
type Guard struct {
	s        *tools.Session
	classify adapt.Classifier
	opts     adapt.Options
	derived  adapt.Derived // the tools' specs taken from their declarations
	ids      adapt.CallIDs // the function call ids calls ran as

	approvals adapt.Approvals // calls awaiting a person's confirmation

	mu      sync.Mutex
	pending map[any]*running // calls let run, by their tool context
}

// running is a call BeforeTool let run.
type running struct {
	p   *tools.Running
	err error // the tool's error, as the first error callback saw it
}

// New returns a guard. It fails when an option is malformed (a spec the
// catalog refuses, a budget that is not a decimal) or is InterruptOnDefer.
func New(opts *Options) (*Guard, error) {
	if opts != nil && opts.InterruptOnDefer {
		return nil, errors.New("adkguard: InterruptOnDefer is not supported: ADK pauses a run only for a tool's own confirmation (functiontool.Config.RequireConfirmation); a deferred call is answered with a result the model reads")
	}
	s, c, err := adapt.NewSession(opts)
	if err != nil {
		return nil, err
	}
	g := &Guard{s: s, classify: c, pending: map[any]*running{}}
	if opts != nil {
		g.opts = *opts
	}
	return g, nil
}

// derive adds to the guard's tool set the tools whose declarations ts
// carry and no spec names (see adapt.Derived).
func (g *Guard) derive(ts ...tool.Tool) {
	ops := make([]preflight.Operation, 0, len(ts))
	for _, t := range ts {
		op := preflight.Operation{Name: t.Name()}
		if d, ok := t.(interface {
			Declaration() *genai.FunctionDeclaration
		}); ok && d.Declaration() != nil {
			op.Schema = adapt.SchemaOf(d.Declaration().ParametersJsonSchema)
		}
		ops = append(ops, op)
	}
	g.derived.Add(g.s, &g.opts, ops...) // fails only on specs New accepted
}

// Session returns the guard's session: its ledger, and the money spent
// (Session().Guard().SpentUSD(ctx)).
func (g *Guard) Session() *tools.Session { return g.s }

// Plugin returns a plugin named [PluginName] for
// runner.Config.PluginConfig that guards every agent of the runner: its
// model callback is BeforeModel, its tool callbacks BeforeTool,
// OnToolError and AfterTool. Put it first among the plugins, so that its
// error callback sees a tool's error before another plugin turns it into
// a response.
func (g *Guard) Plugin() *plugin.Plugin {
	p, _ := plugin.New(plugin.Config{Name: PluginName, BeforeModelCallback: g.BeforeModel,
		BeforeToolCallback: g.BeforeTool, OnToolErrorCallback: g.OnToolError, AfterToolCallback: g.AfterTool})
	return p // plugin.New fails on nothing
}

// key is the identity of one function call: its tool context, which ADK
// makes anew for each call and hands to every callback and to the tool,
// so that two calls with the same function call id stay two calls.
func key(ctx adkagent.Context) any {
	if t := reflect.TypeOf(ctx); t != nil && t.Comparable() {
		return ctx
	}
	return ctx.InvocationID() + "\x00" + ctx.FunctionCallID()
}

// BeforeModel wraps each function tool of the request so that the guard
// knows whether the tool itself ran, and guards streaming tools
// (functiontool.NewStreaming), which ADK runs without tool callbacks. It
// returns nil, nil: the request goes on to the model.
func (g *Guard) BeforeModel(_ adkagent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
	var ts []tool.Tool
	for _, v := range req.Tools {
		if t, ok := v.(tool.Tool); ok {
			ts = append(ts, t)
		}
	}
	g.derive(ts...)
	for name, v := range req.Tools {
		switch t := v.(type) {
		case *guarded, *guardedStream:
		case streamingTool:
			req.Tools[name] = &guardedStream{streamingTool: t, g: g}
		case functionTool:
			req.Tools[name] = &guarded{functionTool: t, g: g}
		}
	}
	return nil, nil
}

// functionTool and streamingTool are the methods ADK calls a function
// tool and a streaming function tool by.
type functionTool interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	Run(ctx adkagent.Context, args any) (map[string]any, error)
}

type streamingTool interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	RunStream(ctx adkagent.Context, args any) iter.Seq2[string, error]
}

// guarded is a function tool that tells the guard it ran.
type guarded struct {
	functionTool
	g *Guard
}

// Run runs the tool and, for a call BeforeTool let run, records its
// outcome at once (AfterTool then has nothing left to do), so that the
// call is settled even when ADK skips the guard's after hook (an
// after-callback ahead of it returned a result).
func (t *guarded) Run(ctx adkagent.Context, args any) (map[string]any, error) {
	t.g.mu.Lock()
	r := t.g.pending[key(ctx)]
	if r != nil {
		delete(t.g.pending, key(ctx))
	}
	t.g.mu.Unlock()
	res, err := t.functionTool.Run(ctx, args)
	if r != nil {
		t.g.finish(ctx, t.Name(), r.p, res, err, err)
	}
	return res, err
}

// DefersResponse keeps what the tool says of its response.
func (t *guarded) DefersResponse() bool {
	d, ok := t.functionTool.(interface{ DefersResponse() bool })
	return ok && d.DefersResponse()
}

// guardedStream is a streaming tool whose calls the guard decides: it
// gathers the stream, so that a result can be saved and reused, and
// yields it as one chunk.
type guardedStream struct {
	streamingTool
	g *Guard
}

func (t *guardedStream) RunStream(ctx adkagent.Context, args any) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		raw, err := json.Marshal(args)
		if err != nil {
			raw = []byte("null")
		}
		cctx := adapt.WithCallID(ctx, &t.g.ids, ctx.FunctionCallID())
		p, ans, w, err := adapt.Start(cctx, t.g.s, t.Name(), raw)
		switch {
		case err != nil:
			yield("", err)
			return
		case w != nil:
			b, _ := json.Marshal(withheld(w)) // strings and slices: cannot fail
			yield(string(b), nil)
			return
		case p == nil:
			yield(string(ans.Result), nil)
			return
		}
		defer p.Release() // after Finish a no-op
		var sb strings.Builder
		for chunk, err := range t.streamingTool.RunStream(ctx, args) {
			if err != nil {
				if paused(err) {
					p.Release()
				} else {
					adapt.Finish(cctx, p, nil, t.g.classify(t.Name(), nil, err), err)
				}
				yield("", err)
				return
			}
			sb.WriteString(chunk)
		}
		b := []byte(sb.String())
		adapt.Finish(cctx, p, b, t.g.classify(t.Name(), b, nil), nil)
		yield(sb.String(), nil)
	}
}

// WithheldKey is the member of a withheld call's function response that
// holds the sentence for the model ("not run: …; … instead"), beside
// "preflight", the decision. It is not "error": ADK marks a tool's span
// as failed when its response has an "error" member, and a call the guard
// decided not to run did not fail.
const WithheldKey = "withheld"

// withheld is the function response of a call not run: w with its
// sentence under WithheldKey.
func withheld(w *adapt.Withheld) map[string]any {
	m := w.Map()
	m[WithheldKey] = m["error"]
	delete(m, "error")
	return m
}

// paused reports whether err says the call asked for a person's
// confirmation, or was refused it, instead of running.
func paused(err error) bool {
	return errors.Is(err, tool.ErrConfirmationRequired) || errors.Is(err, tool.ErrConfirmationRejected)
}

// BeforeTool decides the call of t with args. It returns nil to let the
// call run, or the result to answer with instead: the saved result, or
// why the call was not run. It returns an error only when ctx is done.
func (g *Guard) BeforeTool(ctx adkagent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	g.derive(t)
	raw, err := json.Marshal(args)
	if err != nil {
		raw = []byte("null") // a value JSON cannot carry: decided as no arguments
	}
	cctx, asked := g.approval(ctx, adapt.WithCallID(ctx, &g.ids, ctx.FunctionCallID()), t.Name(), raw)
	if asked != nil {
		return asked, nil
	}
	p, ans, w, err := adapt.Start(cctx, g.s, t.Name(), raw)
	switch {
	case err != nil:
		return nil, err
	case w != nil:
		return withheld(w), nil
	case p != nil:
		g.mu.Lock()
		if old := g.pending[key(ctx)]; old != nil {
			old.p.Release() // the same call again before its after hook: cannot happen in ADK
		}
		g.pending[key(ctx)] = &running{p: p}
		g.mu.Unlock()
		return nil, nil
	}
	var res map[string]any
	if err := json.Unmarshal(ans.Result, &res); err != nil {
		return nil, err
	}
	return res, nil
}

// approval asks, through ADK's tool confirmation, a person to approve a
// call of tool with args that needs it (tools.Spec.Approval), or takes
// the answer the call was resumed with. It returns the result to answer
// the call with instead of running it (asked, or not approved), or the
// context to decide it under (approved: see adapt.Approvals.Answer).
func (g *Guard) approval(ctx adkagent.Context, cctx context.Context, tool string, args json.RawMessage) (context.Context, map[string]any) {
	id := ctx.FunctionCallID()
	conf := ctx.ToolConfirmation()
	if conf == nil {
		ap, w := g.approvals.AskFor(id, g.s, tool, args)
		switch {
		case w != nil:
			return cctx, withheld(w)
		case ap == nil:
			return cctx, nil
		}
		if err := ctx.RequestConfirmation(ap.Message(), ap); err != nil {
			return cctx, withheld(adapt.NotApproved(tool, adapt.ApprovalUnavailable, "not run: "+tool+" needs a person's approval, which could not be asked ("+err.Error()+")"))
		}
		return cctx, withheld(adapt.NotApproved(tool, adapt.ApprovalAsked, "not run yet: "+tool+" waits for a person's approval of this exact call; "+
			"it runs once if they approve"))
	}
	if !g.s.Tools().Consent(tool, args).Needed {
		return cctx, nil // the tool's own confirmation (functiontool.Config.RequireConfirmation): the tool reads it
	}
	ticket := g.approvals.TicketFor(id)
	var p struct {
		Ticket string `json:"ticket"`
	}
	if b, err := json.Marshal(conf.Payload); err == nil && json.Unmarshal(b, &p) == nil && p.Ticket != "" {
		ticket = p.Ticket
	}
	actx, _, w := g.approvals.Answer(cctx, g.s, ticket, tool, args, conf.Confirmed)
	if w != nil {
		return cctx, withheld(w)
	}
	return actx, nil
}

// OnToolError notes the error of a call BeforeTool let run, for
// AfterTool to classify the call by, even when a later error callback
// (plugin/retryandreflect, for one) turns it into a response. It returns
// nil, nil: the error goes on unchanged.
func (g *Guard) OnToolError(ctx adkagent.Context, _ tool.Tool, _ map[string]any, err error) (map[string]any, error) {
	g.mu.Lock()
	if r := g.pending[key(ctx)]; r != nil && r.err == nil {
		r.err = err
	}
	g.mu.Unlock()
	return nil, nil
}

// AfterTool records the outcome of a call BeforeTool let run and saves its
// result. It returns nil, nil: the result goes on unchanged.
//
// A call whose tool did not run after all (another before-callback
// answered it, on a tool BeforeModel wrapped) and a call that asked for a
// confirmation (tool.ErrConfirmationRequired) or was refused one are
// neither failures nor charges: their reservation is given back, and the
// confirmed call, when ADK runs it again, is decided and charged then.
// A response that stands in for the tool's error (seen by OnToolError)
// is classified with that error and never saved for reuse. Calls it did
// not let run are left alone. A call of a tool BeforeModel wrapped is
// recorded by the wrapper as soon as the tool returns, so that an
// after-callback that keeps this one from running (one ahead of it that
// returns a result) leaves no call unsettled.
func (g *Guard) AfterTool(ctx adkagent.Context, t tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
	g.mu.Lock()
	r := g.pending[key(ctx)]
	delete(g.pending, key(ctx))
	g.mu.Unlock()
	if r == nil {
		return nil, nil
	}
	if _, wrapped := t.(*guarded); wrapped { // its tool did not run: Run finishes the calls it runs
		r.p.Release()
		return nil, nil
	}
	cause := err
	if cause == nil {
		cause = r.err
	}
	g.finish(ctx, t.Name(), r.p, result, err, cause)
	return nil, nil
}

// finish records the outcome of call p of tool: its response res and
// error err, classified by cause (the tool's own error). A call that asked
// for a confirmation, or whose response JSON cannot carry, is given back.
func (g *Guard) finish(ctx adkagent.Context, tool string, p *tools.Running, res map[string]any, err, cause error) {
	if paused(cause) {
		p.Release()
		return
	}
	var b []byte
	if err == nil {
		var merr error
		if b, merr = json.Marshal(res); merr != nil {
			p.Release()
			return
		}
	}
	adapt.Finish(adapt.WithCallID(ctx, &g.ids, ctx.FunctionCallID()), p, b, g.classify(tool, b, cause), err)
}
