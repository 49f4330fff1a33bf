package mcpgoguard

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/mark3labs/mcp-go/mcp"
)

// MetaKey is the _meta member of a withheld call's result that carries
// the decision.
const MetaKey = "io.agentpreflight/decision"

// Guard guards the tool calls of mcp-go servers and clients. Each MCP
// session a server middleware sees, and each client Guard.Client wraps,
// is a session (agent/tools) of its own: its own ledger, budget, call
// limit and saved results. It is safe for concurrent use.
type Guard struct {
	opts adapt.Options // Classify never nil

	mu       sync.Mutex
	sessions map[string]*state // server sessions by MCP session id
}

// New returns a guard configured by opts (nil means the zero options; the
// fields are documented on adapt.Options). Classify is given the tool's
// CallToolResult as JSON; nil means [Classify]. Every MCP session gets a
// session of its own built from opts: a LedgerStore shared by them makes
// them spend one budget, and a Ledger given here is shared by all. It
// fails when an option is malformed: a spec the catalog refuses, or a
// budget that is not a decimal.
func New(opts *adapt.Options) (*Guard, error) {
	if opts != nil && opts.InterruptOnDefer {
		return nil, errors.New("mcpgoguard: InterruptOnDefer is not supported: an MCP tool call has no interrupt the guard could raise; a deferred call is answered with a result the client reads")
	}
	g := &Guard{sessions: map[string]*state{}}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.Classify == nil {
		g.opts.Classify = Classify
	}
	if _, err := g.newState(); err != nil {
		return nil, err
	}
	return g, nil
}

// state is the guard of one MCP session.
type state struct {
	s        *tools.Session
	classify adapt.Classifier
	opts     *adapt.Options
	ids      adapt.CallIDs

	approvals adapt.Approvals

	mu     sync.Mutex
	seen   map[string]bool // tool names looked up
	typed  map[string]bool // tools with an outputSchema
	listed bool            // the client listed the tools
}

func (g *Guard) newState() (*state, error) {
	s, c, err := adapt.NewSession(&g.opts)
	if err != nil {
		return nil, err
	}
	return &state{s: s, classify: c, opts: &g.opts, seen: map[string]bool{}, typed: map[string]bool{}}, nil
}

// serverState returns the state of the MCP session id, creating it on
// first use.
func (g *Guard) serverState(id string) *state {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.sessions[id]; st != nil {
		return st
	}
	st, _ := g.newState() // New built one from the same options
	g.sessions[id] = st
	return st
}

// Session returns the session of the MCP session id (a server session's
// SessionID; "" for calls made without one), or nil when it made no call
// or was forgotten: its ledger, and the money spent
// (Session(id).Guard().SpentUSD(ctx)).
func (g *Guard) Session(id string) *tools.Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.sessions[id]; st != nil {
		return st.s
	}
	return nil
}

// Forget drops the state of the MCP session id, with its saved results;
// call it when the session ends (a server.Hooks OnUnregisterSession
// hook). A later call of that session starts a new one.
func (g *Guard) Forget(id string) {
	g.mu.Lock()
	st := g.sessions[id]
	delete(g.sessions, id)
	g.mu.Unlock()
	if st != nil {
		st.s.Close()
	}
}

// learn tells the session's tool set about t, once per name: a tool no
// spec names gets a spec of its own (name, inputSchema when the catalog
// takes it, annotations, price, TTL and retry cap from Defaults, and
// Defaults' effects when it gives no hint), and a spec without a schema
// or annotations gets t's.
func (st *state) learn(t *mcp.Tool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if t == nil || t.Name == "" || st.seen[t.Name] {
		return
	}
	st.seen[t.Name] = true
	schema, ann, typed := describe(t)
	if typed {
		st.typed[t.Name] = true
	}
	set := st.s.Tools()
	sp, ok := set.Spec(t.Name)
	if ok {
		if sp.Operation.Name != t.Name {
			return // an alias of a spec's tool: the spec decides
		}
		addSchema := sp.Operation.Schema == nil && schema != nil
		addAnn := sp.Operation.Annotations == nil && ann != nil
		if !addSchema && !addAnn {
			return
		}
		if addSchema {
			sp.Operation.Schema = schema
		}
		if addAnn {
			sp.Operation.Annotations = ann
		}
	} else {
		def := st.opts.Defaults
		if def.TTLSeconds == "" {
			def.TTLSeconds = adapt.DefaultTTLSeconds
		}
		sp = tools.Spec{Operation: preflight.Operation{Provider: tools.DefaultProvider, Name: t.Name, Schema: schema, Annotations: ann},
			PriceUSD: def.PriceUSD, TTLSeconds: def.TTLSeconds, RetryCap: def.RetryCap}
		if ann == nil {
			sp.Operation.Effects = def.Operation.Effects
		}
	}
	unknown, _ := set.Spec("") // the spec of names the set lacks
	var specs []tools.Spec
	for _, op := range set.Catalog().Operations() {
		if s, ok := set.Spec(op.Name); ok && s.Operation.Provider == op.Provider && s.Operation.Name != t.Name {
			specs = append(specs, s)
		}
	}
	next, err := tools.NewSet(unknown, append(specs, sp)...)
	if err != nil {
		sp.Operation.Schema = nil
		if next, err = tools.NewSet(unknown, append(specs, sp)...); err != nil {
			return
		}
	}
	st.s.SetTools(next)
}

// describe returns t's inputSchema when the catalog takes it, its
// annotations (nil when it gives no hint), and whether it declares an
// outputSchema.
func describe(t *mcp.Tool) (schema json.RawMessage, ann *preflight.ToolAnnotations, typed bool) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, nil, false
	}
	var m struct {
		InputSchema  json.RawMessage            `json:"inputSchema"`
		OutputSchema json.RawMessage            `json:"outputSchema"`
		Annotations  *preflight.ToolAnnotations `json:"annotations"`
	}
	if json.Unmarshal(b, &m) != nil {
		return nil, nil, false
	}
	if len(m.InputSchema) > 0 {
		if _, err := preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "n", Schema: m.InputSchema}); err == nil {
			schema = m.InputSchema
		}
	}
	ann = m.Annotations
	if a := ann; a != nil && a.ReadOnlyHint == nil && a.DestructiveHint == nil && a.IdempotentHint == nil && a.OpenWorldHint == nil {
		ann = nil // no hints: the effects are Defaults'
	}
	o := strings.TrimSpace(string(m.OutputSchema))
	return schema, ann, o != "" && o != "null" && o != "{}"
}

// call guards one tools/call of name with args; run forwards it.
func (st *state) call(ctx context.Context, name string, args json.RawMessage, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	res, w, err := adapt.CallValue(ctx, st.s, func(tool string, _ *mcp.CallToolResult, b []byte, err error) preflight.Outcome {
		return st.classify(tool, b, err)
	}, name, args, func(ctx context.Context) (*mcp.CallToolResult, error) {
		res, err := run(ctx)
		if err == nil && res.NeedsInput() {
			return nil, adapt.Pause(needsInput{res})
		}
		return res, err
	})
	var ni needsInput
	switch {
	case w != nil:
		return st.withheld(w), nil
	case err != nil && asNeedsInput(err, &ni):
		return ni.res, nil
	}
	return res, err
}

// needsInput carries a result that asks the client for more input: the
// call has not done its work yet (see adapt.Pause).
type needsInput struct{ res *mcp.CallToolResult }

func (needsInput) Error() string { return "the tool asks the client for more input" }

func asNeedsInput(err error, ni *needsInput) bool {
	n, ok := err.(needsInput)
	if ok {
		*ni = n
	}
	return ok
}

// withheld is the result of a call that was not run: isError, the
// sentence for the model as its text, the decision in _meta under
// MetaKey and, unless the tool declares an outputSchema (which clients
// check structuredContent against), the whole withheld-call result
// ({"error", "preflight"}) as structuredContent.
func (st *state) withheld(w *adapt.Withheld) *mcp.CallToolResult {
	m := w.Map()
	res := &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{mcp.TextContent{Type: mcp.ContentTypeText, Text: w.Error}},
	}
	res.Meta = mcp.NewMetaFromMap(map[string]any{MetaKey: m["preflight"]})
	st.mu.Lock()
	typed := st.typed[w.Preflight.Tool]
	st.mu.Unlock()
	if !typed {
		res.StructuredContent = m
	}
	return res
}

// arguments returns a request's arguments as JSON: as they came on the
// wire when known; no arguments are {}.
func arguments(p mcp.CallToolParams) json.RawMessage {
	if len(p.RawArguments) > 0 {
		return p.RawArguments
	}
	if p.Arguments == nil {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(p.Arguments)
	if err != nil {
		// Not for arguments decoded from JSON; a value that does not
		// encode is not an object, and the call is answered with why.
		return json.RawMessage(`"arguments that do not encode as JSON"`)
	}
	return b
}

// Classify is the default classifier of a call that ran: result is the
// CallToolResult as JSON. An error is classified by agent.ClassifyError
// (it reads a StatusCode method), except that a JSON-RPC invalid-params
// error (the server refused the arguments) and an error whose text names
// a terminal HTTP status ("HTTP 422": a server's JSON-RPC error carries
// only the handler's text) are terminal. A result with isError true (what
// mcp.NewToolResultError and NewToolResultErrorFromErr return) is a
// failure: transient when its text speaks of a timeout, a rate limit,
// temporary unavailability or "try again"; else as adapt.InBand reads
// its text: by the HTTP status it names ("HTTP 503", "422 Unprocessable
// Entity"), transient when it begins with "error" or "failed"; else
// terminal. Any other result is a success.
func Classify(_ string, result []byte, err error) preflight.Outcome {
	if err != nil {
		o := agent.ClassifyError(err)
		if errors.Is(err, mcp.ErrInvalidParams) {
			return preflight.OutcomeTerminalFailure
		}
		if t, ok := adapt.InBand([]byte(err.Error())); ok && t == preflight.OutcomeTerminalFailure {
			return t
		}
		return o
	}
	var r struct {
		IsError bool            `json:"isError"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(result, &r) != nil || !r.IsError {
		return preflight.OutcomeSuccess
	}
	var blocks []json.RawMessage
	json.Unmarshal(r.Content, &blocks) // content that is not a list has no text
	var text strings.Builder
	for _, b := range blocks {
		var c struct {
			Text string `json:"text"`
		}
		json.Unmarshal(b, &c) // a block without text adds none
		text.WriteString(c.Text)
		text.WriteByte('\n')
	}
	l := strings.ToLower(text.String())
	for _, w := range []string{"timeout", "timed out", "rate limit", "too many requests", "temporarily", "unavailable", "try again", "overloaded"} {
		if strings.Contains(l, w) {
			return preflight.OutcomeTransientFailure
		}
	}
	if o, ok := adapt.InBand([]byte(text.String())); ok {
		return o
	}
	return preflight.OutcomeTerminalFailure
}
