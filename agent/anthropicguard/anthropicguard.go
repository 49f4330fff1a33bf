package anthropicguard

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/anthropics/anthropic-sdk-go/v2"
)

// Guard guards the tool calls of one Claude conversation. It is safe for
// concurrent use: the tool runner runs the tool calls of a turn in
// parallel.
type Guard struct {
	s        *tools.Session
	classify adapt.Classifier
	opts     adapt.Options
	derived  adapt.Derived // the specs of tools no spec names
	ids      adapt.CallIDs // the tool_use ids calls ran as
	uses     toolUses      // tool_use blocks Observe saw, not yet run
}

// New returns a guard configured by opts (nil means the zero options; the
// fields are documented on adapt.Options). Classify is given the text of
// a result's text blocks (or the result as JSON when it has none). It
// fails when an option is malformed: a spec the catalog refuses, or a
// budget that is not a decimal.
func New(opts *adapt.Options) (*Guard, error) {
	if opts != nil && opts.InterruptOnDefer {
		return nil, errors.New("anthropicguard: InterruptOnDefer is not supported: the tool runner has no interrupt to resume a run from; a deferred call is answered with a tool_result the model reads")
	}
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

// Session returns the guard's session: its ledger, and the money spent
// (Session().Guard().SpentUSD(ctx)).
func (g *Guard) Session() *tools.Session { return g.s }

// Tool returns t, a tool of the SDK's tool runner (BetaToolRunner,
// BetaToolRunnerStreaming), guarded: its Execute is decided first, and
// answers with t's result when it ran, the saved result when it was
// reused or coalesced, or one text block holding the withheld-call result
// (a JSON object, never an error) when it was not run. t's own error is
// returned unchanged after it was classified; the runner hands it to the
// model as an is_error result. t is known to the guard by its name and
// input schema from now on (see adapt.Derived).
func (g *Guard) Tool(t anthropic.BetaTool) anthropic.BetaTool {
	g.derived.Add(g.s, &g.opts, preflight.Operation{Name: t.Name(), Schema: adapt.SchemaOf(t.InputSchema())}) // fails only on specs New accepted
	return &guarded{BetaTool: t, g: g}
}

// Tools returns each of ts guarded (see Tool), for NewToolRunner.
func (g *Guard) Tools(ts ...anthropic.BetaTool) []anthropic.BetaTool {
	out := make([]anthropic.BetaTool, len(ts))
	for i, t := range ts {
		out[i] = g.Tool(t)
	}
	return out
}

type guarded struct {
	anthropic.BetaTool
	g *Guard
}

// result is a tool's result as the runner takes it.
type result = []anthropic.BetaToolResultBlockParamContentUnion

func (t *guarded) Execute(ctx context.Context, input json.RawMessage) (result, error) {
	name := t.Name()
	ctx = t.g.withUseID(ctx, name, input)
	res, w, err := adapt.CallValue(ctx, t.g.s, func(tool string, res *result, b []byte, err error) preflight.Outcome {
		return t.g.classify(tool, textOf(res, b), err)
	}, name, input, func(ctx context.Context) (*result, error) {
		r, err := t.BetaTool.Execute(ctx, input)
		if err != nil {
			return nil, err
		}
		return &r, nil
	})
	switch {
	case w != nil:
		return result{{OfText: &anthropic.BetaTextBlockParam{Text: string(w.JSON())}}}, nil
	case err != nil:
		return nil, err
	}
	return *res, nil
}

// textOf returns the text of res's text blocks, one a line; b (res as
// JSON) when it has none.
func textOf(res *result, b []byte) []byte {
	if res == nil {
		return b
	}
	var text []string
	for _, c := range *res {
		if c.OfText != nil {
			text = append(text, c.OfText.Text)
		}
	}
	if len(text) == 0 {
		return b
	}
	return []byte(strings.Join(text, "\n"))
}

// Call guards one tool_use block of a Messages API response in a loop
// written by hand (no tool runner): run runs the tool with the block's
// input and returns its text. The answer is the tool_result block for the
// next user message: run's text when it ran, the saved text when it was
// reused or coalesced, the withheld-call result (JSON) when it was not
// run, and "Error: " and run's error, with is_error, when run failed (as
// the tool runner answers a failed tool). A withheld retry names the call
// it repeats by its tool_use id. Calls may be made in parallel.
func (g *Guard) Call(ctx context.Context, block anthropic.ToolUseBlock, run func(ctx context.Context, input json.RawMessage) (string, error)) anthropic.ContentBlockParamUnion {
	g.derived.Add(g.s, &g.opts, preflight.Operation{Name: block.Name})
	ans, w, err := adapt.Call(adapt.WithCallID(ctx, &g.ids, block.ID), g.s, g.classify, block.Name, block.Input, func(ctx context.Context) ([]byte, error) {
		s, err := run(ctx, block.Input)
		return []byte(s), err
	})
	switch {
	case w != nil:
		return anthropic.NewToolResultBlock(block.ID, string(w.JSON()), false)
	case err != nil:
		return anthropic.NewToolResultBlock(block.ID, "Error: "+err.Error(), true)
	}
	return anthropic.NewToolResultBlock(block.ID, string(ans.Result), false)
}
