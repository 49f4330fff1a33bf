package adkguard

import (
	"encoding/json"
	"sync"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	adkagent "google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
)

// PluginName is the name of the plugin Guard.Plugin returns.
const PluginName = "preflight"

// Options configures a [Guard]: its session, its tools' specs and how
// the outcome of a call that ran is classified (the fields are documented
// on [adapt.Options]). Classify is given the function response as
// JSON. The zero value and nil both work.
type Options = adapt.Options

// Guard guards the tool calls of one ADK run. It is safe for concurrent
// use.
type Guard struct {
	s        *tools.Session
	classify adapt.Classifier

	mu      sync.Mutex
	pending map[string]*tools.Running // calls running, by invocation and function call id
}

// New returns a guard. It fails when an option is malformed: a spec the
// catalog refuses, or a budget that is not a decimal.
func New(opts *Options) (*Guard, error) {
	s, c, err := adapt.NewSession(opts)
	if err != nil {
		return nil, err
	}
	return &Guard{s: s, classify: c, pending: map[string]*tools.Running{}}, nil
}

// Session returns the guard's session: its ledger, and the money spent
// (Session().Guard().SpentUSD(ctx)).
func (g *Guard) Session() *tools.Session { return g.s }

// Plugin returns a plugin named [PluginName] whose tool callbacks are
// BeforeTool and AfterTool, for runner.Config.PluginConfig: it guards
// every agent of the runner.
func (g *Guard) Plugin() *plugin.Plugin {
	p, _ := plugin.New(plugin.Config{Name: PluginName, BeforeToolCallback: g.BeforeTool, AfterToolCallback: g.AfterTool})
	return p // plugin.New fails on nothing
}

func key(ctx adkagent.Context) string { return ctx.InvocationID() + "\x00" + ctx.FunctionCallID() }

// BeforeTool decides the call of t with args. It returns nil to let the
// call run, or the result to answer with instead: the saved result, or
// why the call was not run. It returns an error only when ctx is done.
func (g *Guard) BeforeTool(ctx adkagent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		raw = []byte("null") // a value JSON cannot carry: decided as no arguments
	}
	p, ans, w, err := adapt.Start(ctx, g.s, t.Name(), raw)
	switch {
	case err != nil:
		return nil, err
	case w != nil:
		return w.Map(), nil
	case p != nil:
		g.mu.Lock()
		if old := g.pending[key(ctx)]; old != nil {
			old.Release() // the same call again before its after hook: cannot happen in ADK
		}
		g.pending[key(ctx)] = p
		g.mu.Unlock()
		return nil, nil
	}
	var res map[string]any
	if err := json.Unmarshal(ans.Result, &res); err != nil {
		return nil, err
	}
	return res, nil
}

// AfterTool records the outcome of a call BeforeTool let run and saves its
// result. It returns nil, nil: the result goes on unchanged. Calls it did
// not let run (answered by BeforeTool or another callback) are left
// alone.
func (g *Guard) AfterTool(ctx adkagent.Context, t tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
	g.mu.Lock()
	p := g.pending[key(ctx)]
	delete(g.pending, key(ctx))
	g.mu.Unlock()
	if p == nil {
		return nil, nil
	}
	var b []byte
	if err == nil {
		var merr error
		if b, merr = json.Marshal(result); merr != nil {
			p.Release()
			return nil, nil
		}
	}
	p.Finish(ctx, b, g.classify(t.Name(), b, err), err)
	return nil, nil
}
