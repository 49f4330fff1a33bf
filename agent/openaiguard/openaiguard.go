package openaiguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// Guard guards the tool calls of one OpenAI conversation or agent
// session. It is safe for concurrent use.
type Guard struct {
	s        *tools.Session
	classify adapt.Classifier
	opts     adapt.Options
	derived  adapt.Derived // the specs of tools no spec names
	ids      adapt.CallIDs // the tool call ids calls ran as
}

// New returns a guard configured by opts (nil means the zero options; the
// fields are documented on adapt.Options). Classify is given a tool's
// output: its text, or other outputs as JSON. It fails when an option is
// malformed: a spec the catalog refuses, or a budget that is not a
// decimal.
func New(opts *adapt.Options) (*Guard, error) {
	if opts != nil && opts.InterruptOnDefer {
		return nil, errors.New("openaiguard: InterruptOnDefer is not supported: the SDK's tool loops have no interrupt to resume a run from; a deferred call is answered with a tool result the model reads")
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

// Handlers returns hs, the ToolHandlers of an agent session stream
// (client.Beta.Agents.Sessions.Stream), each guarded (see Handler).
func (g *Guard) Handlers(hs map[string]openai.AgentToolHandler) map[string]openai.AgentToolHandler {
	out := make(map[string]openai.AgentToolHandler, len(hs))
	for name, h := range hs {
		out[name] = g.Handler(name, h)
	}
	return out
}

// Handler returns h, the agent tool handler of the function name,
// guarded: each call is decided first, and answered with h's output when
// it ran, the saved output when it was reused or coalesced, or the
// withheld-call result (a map, never an error) when it was not run. h's
// own error is returned unchanged after it was classified; the SDK then
// sends the model a generic failed tool result. The function is known to
// the guard by its name from now on (see adapt.Derived).
//
// A string output is saved as its text, any other as JSON; a saved
// output is handed on as a string, or, when it is a JSON object or array,
// as the map or content parts it was.
func (g *Guard) Handler(name string, h openai.AgentToolHandler) openai.AgentToolHandler {
	g.derived.Add(g.s, &g.opts, preflight.Operation{Name: name}) // fails only on specs New accepted
	return func(ctx context.Context, args map[string]any) (any, error) {
		b, err := json.Marshal(args)
		if err != nil {
			// Not for arguments the SDK decoded from JSON; a value that
			// does not encode is not an object, and the call is answered
			// with why.
			b = json.RawMessage(`"arguments that do not encode as JSON"`)
		}
		var fresh any
		ans, w, err := adapt.Call(ctx, g.s, g.classify, name, b, func(ctx context.Context) ([]byte, error) {
			out, err := h(ctx, args)
			if err != nil {
				return nil, err
			}
			fresh = out
			if s, ok := out.(string); ok {
				return []byte(s), nil
			}
			return json.Marshal(out)
		})
		switch {
		case w != nil:
			return w.Map(), nil
		case err != nil:
			return nil, err
		case ans.How == tools.HowRan:
			return fresh, nil
		}
		return saved(ans.Result), nil
	}
}

// saved is a saved output as a handler's output: a map for a JSON object,
// content parts for a JSON array, else the text.
func saved(b []byte) any {
	t := bytes.TrimSpace(b)
	switch {
	case len(t) > 0 && t[0] == '{':
		var m map[string]any
		if json.Unmarshal(t, &m) == nil {
			return m
		}
	case len(t) > 0 && t[0] == '[':
		var parts []openai.InputContentParamUnion
		if json.Unmarshal(t, &parts) == nil {
			return parts
		}
	}
	return string(b)
}

// Call guards one tool call of a Chat Completions response in a loop
// written by hand: run runs the function with the call's JSON arguments
// (a custom tool's input as {"input": …}) and returns its text. The answer
// is the tool message for the next request: run's text when it ran, the
// saved text when it was reused or coalesced, the withheld-call result
// (JSON) when it was not run, and "error: " and run's error when run
// failed, so that the model can carry on. A withheld retry names the call
// it repeats by its tool call id. Calls may be made in parallel.
func (g *Guard) Call(ctx context.Context, call openai.ChatCompletionMessageToolCallUnion, run func(ctx context.Context, args json.RawMessage) (string, error)) openai.ChatCompletionMessageParamUnion {
	name, args := call.Function.Name, json.RawMessage(call.Function.Arguments)
	if call.Type == "custom" {
		b, _ := json.Marshal(map[string]string{"input": call.Custom.Input}) // a string: cannot fail
		name, args = call.Custom.Name, b
	}
	return openai.ToolMessage(g.answer(ctx, call.ID, name, args, run), call.ID)
}

// CallResponse is Call for a function call of a Responses API response
// (client.Responses.New) in a loop written by hand: the answer is the
// function_call_output input item for the next request, named by the
// call's call_id.
func (g *Guard) CallResponse(ctx context.Context, call responses.ResponseFunctionToolCall, run func(ctx context.Context, args json.RawMessage) (string, error)) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(g.answer(ctx, call.CallID, call.Name, json.RawMessage(call.Arguments), run))
	item.OfFunctionCallOutput.CallID = param.NewOpt(call.CallID)
	return item
}

// answer guards one call the model named id and returns the text for the
// model: run's, the saved one, the withheld-call result, or "error: " and
// run's error.
func (g *Guard) answer(ctx context.Context, id, name string, args json.RawMessage, run func(ctx context.Context, args json.RawMessage) (string, error)) string {
	g.derived.Add(g.s, &g.opts, preflight.Operation{Name: name})
	ans, w, err := adapt.Call(adapt.WithCallID(ctx, &g.ids, id), g.s, g.classify, name, args, func(ctx context.Context) ([]byte, error) {
		s, err := run(ctx, args)
		return []byte(s), err
	})
	switch {
	case w != nil:
		return string(w.JSON())
	case err != nil:
		return "error: " + err.Error()
	}
	return string(ans.Result)
}
