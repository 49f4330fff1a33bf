package langchaingoguard

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	pftools "github.com/agentpreflight/preflight/agent/tools"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"
)

// Guard guards the tool calls of one LangChainGo run. It is safe for
// concurrent use.
type Guard struct {
	s        *pftools.Session
	classify adapt.Classifier
	opts     adapt.Options
	derived  adapt.Derived // the specs of tools no spec names
	ids      adapt.CallIDs // the tool call ids calls ran as

	mu      sync.Mutex
	planned []schema.AgentAction // actions planned and not yet run, in order
}

// New returns a guard configured by opts (nil means the zero options; the
// fields are documented on adapt.Options). Classify is given the tool's
// text output. It fails when an option is malformed: a spec the catalog
// refuses, or a budget that is not a decimal.
func New(opts *adapt.Options) (*Guard, error) {
	if opts != nil && opts.InterruptOnDefer {
		return nil, errors.New("langchaingoguard: InterruptOnDefer is not supported: LangChainGo's executor has no interrupt to resume a run from; a deferred call is answered with an observation the model reads")
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
func (g *Guard) Session() *pftools.Session { return g.s }

// Tool returns t guarded: each Call is decided first, and answered with
// t's output when it ran, with the saved output when it was reused, or
// with the withheld-call result (a JSON object, never an error) when it
// was not run. t's own error is returned unchanged, after it was
// classified. t is known to the guard by its name from now on (see
// adapt.Derived).
func (g *Guard) Tool(t tools.Tool) tools.Tool {
	g.derived.Add(g.s, &g.opts, preflight.Operation{Name: t.Name()}) // fails only on specs New accepted
	return &guarded{g: g, t: t}
}

// Tools returns each of ts guarded (see Tool).
func (g *Guard) Tools(ts ...tools.Tool) []tools.Tool {
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = g.Tool(t)
	}
	return out
}

// Agent returns a, for agents.NewExecutor, with its tools guarded (see
// Tool) and a tool's Go error handed to the model as the observation
// "error: " and the error's text, so that a failing tool does not end the
// executor's run; the guard has classified the error first. An error
// after the run's context is done still ends the run. A withheld call's
// result names the call it repeats by the model's tool call id. The
// agent's own Plan, prompt and tool descriptions are unchanged.
func (g *Guard) Agent(a agents.Agent) agents.Agent {
	ts := a.GetTools()
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = observed{g.Tool(t)}
	}
	return &agent{Agent: a, g: g, tools: out}
}

// guarded is a tool behind the guard.
type guarded struct {
	g *Guard
	t tools.Tool
}

func (t *guarded) Name() string        { return t.t.Name() }
func (t *guarded) Description() string { return t.t.Description() }

// Call guards one call of the tool with input.
func (t *guarded) Call(ctx context.Context, input string) (string, error) {
	name := t.t.Name()
	ctx = adapt.WithCallID(ctx, &t.g.ids, t.g.callID(name, input))
	ans, w, err := adapt.Call(ctx, t.g.s, t.g.classify, name, Arguments(input), func(ctx context.Context) ([]byte, error) {
		out, err := t.t.Call(ctx, input)
		if err != nil {
			return nil, err
		}
		return []byte(out), nil
	})
	switch {
	case err != nil:
		return "", err
	case w != nil:
		return string(w.JSON()), nil
	}
	return string(ans.Result), nil
}

// Arguments returns the JSON arguments a call with a LangChainGo tool's
// input is decided by: the input itself when it is a JSON object (what
// function-calling agents pass), else {"input": input} (the free text of a
// ReAct agent). An input that is not valid UTF-8, which JSON cannot carry
// unchanged, is {"inputBase64": …} instead, so that two inputs are never
// decided (and answered) as one.
func Arguments(input string) json.RawMessage {
	if !utf8.ValidString(input) {
		b, _ := json.Marshal(map[string]string{"inputBase64": base64.StdEncoding.EncodeToString([]byte(input))}) // a string: cannot fail
		return b
	}
	t := bytes.TrimSpace([]byte(input))
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t
	}
	b, _ := json.Marshal(map[string]string{"input": input}) // a string: cannot fail
	return b
}

// observed hands a tool's error to the model as its observation.
type observed struct{ tools.Tool }

func (t observed) Call(ctx context.Context, input string) (string, error) {
	out, err := t.Tool.Call(ctx, input)
	if err != nil && ctx.Err() == nil {
		return "error: " + err.Error(), nil
	}
	return out, err
}

// agent is an agent whose tools are guarded and whose planned tool calls
// are noted, so that a call is named by its tool call id.
type agent struct {
	agents.Agent
	g     *Guard
	tools []tools.Tool
}

func (a *agent) GetTools() []tools.Tool { return a.tools }

func (a *agent) Plan(ctx context.Context, steps []schema.AgentStep, inputs map[string]string, options ...chains.ChainCallOption) ([]schema.AgentAction, *schema.AgentFinish, error) {
	actions, finish, err := a.Agent.Plan(ctx, steps, inputs, options...)
	a.g.mu.Lock()
	a.g.planned = append(a.g.planned[:0], actions...)
	a.g.mu.Unlock()
	return actions, finish, err
}

// callID returns the tool call id of the first planned action that
// calls tool with input, and forgets that action; "" when none does. The
// executor runs a plan's actions in order, each with its input less a
// trailing "\nObservation:".
func (g *Guard) callID(tool, input string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, a := range g.planned {
		if strings.EqualFold(a.Tool, tool) && strings.TrimSuffix(a.ToolInput, "\nObservation:") == input {
			g.planned = append(g.planned[:i], g.planned[i+1:]...)
			return a.ToolID
		}
	}
	return ""
}
