package einoguard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// Options configures a [Guard]: its session, its tools' specs and how
// the outcome of a call that ran is classified (the fields are documented
// on [adapt.Options]). Classify is given the tool's output: its
// text, or a multimodal result as JSON. The zero value and nil both work.
type Options = adapt.Options

// Guard guards the tool calls of one eino run. It is safe for concurrent
// use.
type Guard struct {
	s        *tools.Session
	classify adapt.Classifier
	opts     adapt.Options
	derived  adapt.Derived // the specs of tools no spec names
	ids      adapt.CallIDs // the tool call ids calls ran as

	approvals adapt.Approvals
}

// New returns a guard. It fails when an option is malformed: a spec the
// catalog refuses, or a budget that is not a decimal.
func New(opts *Options) (*Guard, error) {
	s, c, err := adapt.NewSession(opts)
	if err != nil {
		return nil, err
	}
	g := &Guard{s: s, classify: c}
	if opts != nil {
		g.opts = *opts
	}
	return g, nil
}

// Describe tells the guard the tools of the agent, so that those without
// a spec are known by their ToolInfo: name and parameters' JSON schema
// (see adapt.Derived). Without it, a tool without a spec is known by its
// name alone, from its first call. It fails when a tool's Info does.
func (g *Guard) Describe(ctx context.Context, ts ...tool.BaseTool) error {
	ops := make([]preflight.Operation, 0, len(ts))
	for _, t := range ts {
		info, err := t.Info(ctx)
		if err != nil {
			return err
		}
		op := preflight.Operation{Name: info.Name}
		if info.ParamsOneOf != nil {
			if js, err := info.ParamsOneOf.ToJSONSchema(); err == nil && js != nil {
				op.Schema = adapt.SchemaOf(js)
			}
		}
		ops = append(ops, op)
	}
	return g.derived.Add(g.s, &g.opts, ops...)
}

// Session returns the guard's session: its ledger, and the money spent
// (Session().Guard().SpentUSD(ctx)).
func (g *Guard) Session() *tools.Session { return g.s }

// Middleware returns the tool middleware, for
// ToolsNodeConfig.ToolCallMiddlewares. It guards invokable, streamable and
// enhanced (multimodal) tools.
func (g *Guard) Middleware() compose.ToolMiddleware {
	return compose.ToolMiddleware{
		Invokable:          g.invokable,
		Streamable:         g.streamable,
		EnhancedInvokable:  g.enhancedInvokable,
		EnhancedStreamable: g.enhancedStreamable,
	}
}

// pause marks an interrupt (tool.Interrupt, compose.Interrupt and their
// stateful forms) as a call that did not do its work: neither a failure
// nor a charge (see adapt.Pause).
func pause(err error) error {
	if _, ok := compose.IsInterruptRerunError(err); ok {
		return adapt.Pause(err)
	}
	return err
}

func (g *Guard) call(ctx context.Context, in *compose.ToolInput, run func(context.Context) ([]byte, error)) ([]byte, error) {
	g.derived.Add(g.s, &g.opts, preflight.Operation{Name: in.Name}) // fails only on specs New accepted
	ctx, w, err := g.approval(ctx, in)
	switch {
	case err != nil:
		return nil, err
	case w != nil:
		return w.JSON(), nil
	}
	ans, w, err := adapt.Call(adapt.WithCallID(ctx, &g.ids, in.CallID), g.s, g.classify, in.Name, json.RawMessage(in.Arguments), func(ctx context.Context) ([]byte, error) {
		b, err := run(ctx)
		return b, pause(err)
	})
	switch {
	case err != nil:
		return nil, err
	case w != nil:
		if g.opts.InterruptOnDefer && w.Preflight.Decision == preflight.VerdictDefer {
			return nil, tool.Interrupt(ctx, string(w.JSON()))
		}
		return w.JSON(), nil
	}
	return ans.Result, nil
}

func (g *Guard) invokable(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
		b, err := g.call(ctx, in, func(ctx context.Context) ([]byte, error) {
			out, err := next(ctx, in)
			if err != nil || out == nil {
				return nil, err
			}
			return []byte(out.Result), nil
		})
		if err != nil {
			return nil, err
		}
		return &compose.ToolOutput{Result: string(b)}, nil
	}
}

func (g *Guard) streamable(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
		b, err := g.call(ctx, in, func(ctx context.Context) ([]byte, error) {
			out, err := next(ctx, in)
			if err != nil || out == nil || out.Result == nil {
				return nil, err
			}
			chunks, err := gather(out.Result)
			if err != nil {
				return nil, err
			}
			return []byte(strings.Join(chunks, "")), nil
		})
		if err != nil {
			return nil, err
		}
		return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{string(b)})}, nil
	}
}

func (g *Guard) enhancedInvokable(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
		res, err := g.enhanced(ctx, in, func(ctx context.Context) (*schema.ToolResult, error) {
			out, err := next(ctx, in)
			if err != nil || out == nil {
				return nil, err
			}
			return out.Result, nil
		})
		if err != nil {
			return nil, err
		}
		return &compose.EnhancedInvokableToolOutput{Result: res}, nil
	}
}

func (g *Guard) enhancedStreamable(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
		res, err := g.enhanced(ctx, in, func(ctx context.Context) (*schema.ToolResult, error) {
			out, err := next(ctx, in)
			if err != nil || out == nil || out.Result == nil {
				return nil, err
			}
			chunks, err := gather(out.Result)
			if err != nil {
				return nil, err
			}
			return schema.ConcatToolResults(chunks)
		})
		if err != nil {
			return nil, err
		}
		return &compose.EnhancedStreamableToolOutput{Result: schema.StreamReaderFromArray([]*schema.ToolResult{res})}, nil
	}
}

// enhanced guards a multimodal call: its result is saved as JSON.
func (g *Guard) enhanced(ctx context.Context, in *compose.ToolInput, run func(context.Context) (*schema.ToolResult, error)) (*schema.ToolResult, error) {
	g.derived.Add(g.s, &g.opts, preflight.Operation{Name: in.Name})
	ctx, w, err := g.approval(ctx, in)
	switch {
	case err != nil:
		return nil, err
	case w != nil:
		return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: string(w.JSON())}}}, nil
	}
	res, w, err := adapt.CallValue(adapt.WithCallID(ctx, &g.ids, in.CallID), g.s, g.classifyResult, in.Name, json.RawMessage(in.Arguments), func(ctx context.Context) (*schema.ToolResult, error) {
		r, err := run(ctx)
		return r, pause(err)
	})
	if w != nil {
		if g.opts.InterruptOnDefer && w.Preflight.Decision == preflight.VerdictDefer {
			return nil, tool.Interrupt(ctx, string(w.JSON()))
		}
		return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: string(w.JSON())}}}, nil
	}
	return res, err
}

// approval asks, with an eino interrupt, a person to approve a call that
// needs it (tools.Spec.Approval), or takes the answer the run was resumed
// with. It returns the interrupt to end the call with (asked, or asked
// again when the resume targets another call), or w, the call's result
// when it is not run, or the context to decide it under (approved).
func (g *Guard) approval(ctx context.Context, in *compose.ToolInput) (context.Context, *adapt.Withheld, error) {
	args := json.RawMessage(in.Arguments)
	if !g.s.Tools().Consent(in.Name, args).Needed {
		return ctx, nil, nil
	}
	asked, _, info := tool.GetInterruptState[string](ctx) // the approval asked, as JSON
	if !asked {
		ap, w := g.approvals.Ask(g.s, in.Name, args)
		if w != nil {
			return ctx, w, nil
		}
		b, _ := json.Marshal(ap) // strings and valid JSON: cannot fail
		return ctx, nil, tool.StatefulInterrupt(ctx, string(b), string(b))
	}
	target, _, yes := tool.GetResumeContext[bool](ctx)
	if !target { // another call was resumed: this one still waits
		return ctx, nil, tool.StatefulInterrupt(ctx, info, info)
	}
	var ap adapt.Approval
	json.Unmarshal([]byte(info), &ap) // a state that does not decode names no ticket: invalid
	actx, _, w := g.approvals.Answer(ctx, g.s, ap.Ticket, in.Name, args, yes)
	return actx, w, nil
}

// classifyResult classifies a multimodal call by its result's JSON.
func (g *Guard) classifyResult(tool string, _ *schema.ToolResult, result []byte, err error) preflight.Outcome {
	return g.classify(tool, result, err)
}

// gather reads a stream to its end and closes it.
func gather[T any](sr *schema.StreamReader[T]) ([]T, error) {
	defer sr.Close()
	var out []T
	for {
		v, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}
