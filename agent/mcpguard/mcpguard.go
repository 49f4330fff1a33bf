package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaKey is the _meta member of a withheld call's result that carries the
// decision.
const MetaKey = "io.agentpreflight/decision"

// Options configures the middleware. The zero value and nil both work.
//
// Its fields are those of [adapt.Options], the options of every
// agent-framework adapter, and mean the same, except as said here: a
// Ledger cannot be given (every MCP session gets its own), calls are
// classified by [Classify], and there is no InterruptOnDefer (a deferred
// call is a tool result the client reads).
type Options struct {
	// BudgetUSD, when non-empty, is each MCP session's budget.
	BudgetUSD json.Number
	// MaxCalls, when positive, is each MCP session's call limit.
	MaxCalls int
	// Advise is the policy for reduce-scope advice.
	Advise agent.AdvisePolicy
	// Unsupported is the policy for names the tool list lacks.
	Unsupported agent.UnsupportedPolicy
	// NoCoalesce turns off coalescing of identical calls in flight.
	NoCoalesce bool
	// LedgerStore keeps each session's money and history; nil means an
	// in-process store per session. A store shared by sessions makes
	// them spend one budget.
	LedgerStore agent.LedgerStore
	// Lease is how long a call's reservation outlives a worker that died
	// during the call, on a LedgerStore shared by processes.
	Lease time.Duration
	// Results keeps results for reuse and coalescing, shared by every
	// session; a *tools.SharedResultStore gives each session a quota of
	// its own in it, which no other session's traffic evicts within its
	// TTL, dropped when the session ends. Nil means one
	// tools.NewSharedResultStore(nil) per middleware (per Server or Client
	// call; per NewSession for a [Session]): 64 MiB for all its sessions.
	Results tools.ResultStore
	// Claims, when set, is exactly-once state shared with the other
	// processes guarding the same scope on the same LedgerStore (see
	// [CallClaims]): a repeat of a call another process runs or ran
	// within its idempotency window is answered from there and never run
	// twice, and a call awaiting the client's input (input_required) is
	// parked there, so that the client's retry continues it in whichever
	// process gets it. Nil means this process alone answers repeats and
	// continues its calls. Only a [Session] reads it.
	Claims CallClaims
	// Approvals configures the asking of a person's approval for the
	// tools whose spec has an Approval (see "Approvals" in approval.go).
	// Only a Session asks: the Server and Client middleware never run a
	// call that needs approval (its result says so).
	Approvals Approvals
	// RunID names the run in every proposal. Empty means "session".
	RunID string
	// Specs set price, TTL, retry cap, schema and effects per tool name;
	// empty PriceUSD, TTLSeconds, RetryCap and IdempotencySeconds are
	// taken from Defaults.
	// A spec's Operation.Schema and Annotations, when nil, are taken from
	// the tool list; its Provider, when empty, is tools.DefaultProvider.
	Specs []tools.Spec
	// AssertFormat makes "format" an assertion (see
	// preflight.Operation.AssertFormat) in the inputSchema of listed
	// tools, and in their outputSchema. A Spec with a Schema of its own
	// keeps its Operation.AssertFormat. False: format is an annotation.
	AssertFormat bool
	// NoOutputCheck turns off the check of results against their tool's
	// listed outputSchema. By default the structuredContent of each
	// result a tool with an outputSchema returns (isError false) is
	// validated against it, and a mismatch is a warning: logged, and in
	// CallReport.OutputIssues; the result is passed on as it is, never
	// blocked.
	NoOutputCheck bool
	// Logger receives a warning for each listed tool whose inputSchema
	// cannot be used (a $ref to another document, an unknown $schema, an
	// ill-formed keyword), naming the tool and the reason: that tool's
	// arguments are not checked. Nil means slog.Default().
	Logger *slog.Logger
	// Defaults gives the price, TTL, retry cap and idempotency window of
	// listed tools without a spec and of names the tool list lacks. An
	// empty TTLSeconds means adapt.DefaultTTLSeconds; "0" disables reuse.
	// An empty IdempotencySeconds means DefaultIdempotencySeconds; "0"
	// turns off the answering of repeats from memory (see
	// Session.CallTool; only a Session reads it).
	Defaults tools.Spec
	// Receipts, when non-nil, signs each decision the guard makes (see
	// package receipt): the result of a call it decided (run, withheld or
	// reused) carries in _meta the receipt under receipt.MetaKey, the
	// request decided (with the history, budget and call limit filled in)
	// under receipt.RequestMetaKey and the decision signed under
	// receipt.ResponseMetaKey, members of those names from the server
	// replaced. The receipts of one MCP session (one [Session]) form a
	// chain: each names the hash of the one signed before it. A call
	// continued after input_required, a repeat answered from memory and an
	// error get no new receipt. Recomputing a decision needs the catalog
	// the guard decided with: the specs and the listed tools' schemas.
	Receipts *receipt.Signer
}

// adapt returns o as the options of every adapter.
func (o *Options) adapt() adapt.Options {
	return adapt.Options{
		BudgetUSD: o.BudgetUSD, MaxCalls: o.MaxCalls, Advise: o.Advise, Unsupported: o.Unsupported,
		NoCoalesce: o.NoCoalesce, LedgerStore: o.LedgerStore, Lease: o.Lease,
		Results: o.Results, RunID: o.RunID, Specs: o.Specs, Defaults: o.Defaults,
	}
}

// guard is the state the middleware keeps: one tools.Session per MCP
// session.
type guard struct {
	opts Options

	mu       sync.Mutex
	sessions map[mcp.Session]*session
}

// session is one MCP session's guard state.
type session struct {
	s *tools.Session

	mu      sync.Mutex
	listed  bool            // a complete tools/list was seen
	tools   []*mcp.Tool     // from the last complete tools/list
	partial []*mcp.Tool     // pages of a tools/list in progress
	missing map[string]bool // names looked for since the last list
	typed   map[string]bool // tools with an outputSchema
	// unchecked maps a listed tool whose inputSchema could not be used to
	// the reason; its arguments are taken as any object.
	unchecked map[string]string
	// outputs holds the compiled outputSchema of each listed tool that
	// has a usable one (none with Options.NoOutputCheck).
	outputs map[string]*preflight.Catalog
	// chain signs the session's decisions (Options.Receipts).
	chain receipts
}

func newGuard(opts *Options) *guard {
	g := &guard{sessions: make(map[mcp.Session]*session)}
	if opts != nil {
		g.opts = *opts
	}
	if g.opts.Results == nil {
		g.opts.Results = tools.NewSharedResultStore(nil)
	}
	if g.opts.Logger == nil {
		g.opts.Logger = slog.Default()
	}
	if g.opts.Defaults.TTLSeconds == "" {
		g.opts.Defaults.TTLSeconds = adapt.DefaultTTLSeconds
	}
	if g.opts.Defaults.IdempotencySeconds == "" {
		g.opts.Defaults.IdempotencySeconds = DefaultIdempotencySeconds
	}
	return g
}

// session returns the state of ms, creating it on first use. It is
// dropped when the session ends, with its saved results.
func (g *guard) session(ms mcp.Session) (*session, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.sessions[ms]; st != nil {
		return st, nil
	}
	st, err := g.newSession()
	if err != nil {
		return nil, err
	}
	g.sessions[ms] = st
	if w, ok := ms.(interface{ Wait() error }); ok {
		go func() {
			w.Wait()
			g.mu.Lock()
			delete(g.sessions, ms)
			g.mu.Unlock()
			st.s.Close()
		}()
	}
	return st, nil
}

// newSession returns the guard state of a new session, with the
// configured specs until a tools/list arrives.
func (g *guard) newSession() (*session, error) {
	ts, _, err := g.toolset(nil)
	if err != nil {
		return nil, err
	}
	o := g.opts.adapt()
	so := o.SessionOptions()
	s, err := tools.NewSession(ts, &so)
	if err != nil {
		return nil, err
	}
	return &session{s: s, missing: make(map[string]bool), typed: make(map[string]bool), chain: receipts{signer: g.opts.Receipts}}, nil
}

// sawList takes in one page of a tools/list result.
func (g *guard) sawList(st *session, params *mcp.ListToolsParams, res *mcp.ListToolsResult) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if params == nil || params.Cursor == "" {
		st.partial = nil
	}
	st.partial = append(st.partial, res.Tools...)
	if res.NextCursor != "" {
		return
	}
	st.tools, st.partial, st.listed = st.partial, nil, true
	clear(st.missing)
	st.typed = make(map[string]bool)
	for _, t := range st.tools {
		if t != nil && t.OutputSchema != nil {
			st.typed[t.Name] = true
		}
	}
	if ts, unchecked, err := g.toolset(st.tools); err == nil {
		st.s.SetTools(ts)
		st.unchecked = unchecked
	}
	st.outputs = g.outputSchemas(st.tools)
}

// uncheckedReason is why the listed inputSchema of tool name could not be
// used, or "" when it could (or the tool was not listed).
func (st *session) uncheckedReason(name string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.unchecked[name]
}

// needsList reports whether a call of name should first list the tools:
// none were listed yet, or name is not among them and was not looked for
// since the last list.
func (st *session) needsList(name string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.listed {
		return true
	}
	if _, ok := st.s.Tools().Spec(name); ok || st.missing[name] {
		return false
	}
	st.missing[name] = true
	return true
}

// structured reports whether a withheld result for tool may carry
// structuredContent: not when the tool declares an outputSchema.
func (st *session) structured(tool string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return !st.typed[tool]
}

// call guards one tools/call: name and raw arguments, run forwarding it.
// It returns the result to answer with, or run's error.
func (g *guard) call(ctx context.Context, st *session, name string, args json.RawMessage, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	if c := st.s.Tools().Consent(name, args); c.Needed {
		// Only a Session asks a person (see Approvals): here the call is
		// not run rather than run unapproved.
		w := Withheld{Tool: name, ReasonCodes: []preflight.ReasonCode{}, Approval: "unavailable",
			Message: "not run: " + name + " needs a person's approval (" + c.Reason + "), which the Server and Client middleware cannot ask; guard the calls with an mcpguard.Session (as preflightd proxy does) to have it asked"}
		return w.result(st.structured(name)), nil
	}
	var fresh *mcp.CallToolResult
	ans, err := st.s.Call(ctx, name, args, func(ctx context.Context) ([]byte, preflight.Outcome, error) {
		res, err := run(ctx)
		if err != nil {
			return nil, st.failed(name, err), err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, preflight.OutcomeTransientFailure, err
		}
		fresh = res
		g.checkOutput(st, name, readResult(b)) // a warning, logged: the middleware has no CallReport
		return b, Classify(res, nil), nil
	})
	var pe *preflight.Error
	switch {
	case errors.As(err, &pe):
		return notEvaluated(pe, name, args, st.structured(name)), nil
	case err != nil:
		return nil, err
	}
	sg := st.chain.sign(ans.Report.Request, ans.Report.Decision)
	switch ans.How {
	case tools.HowRan:
		sg.into(fresh)
		return fresh, nil
	case tools.HowWithheld:
		res := withheld(ans, name, st.structured(name))
		sg.into(res)
		return res, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(ans.Result, &res); err != nil {
		return nil, err
	}
	sg.into(&res)
	return &res, nil
}

// Close drops the session's saved results from the store (see
// Options.Results); call it when the MCP session ends. Calls after Close
// still work, without reuse.
//
// Calls awaiting the client's input (see CallTool) end then, as transient
// failures, and the results kept for repeats are dropped.
func (s *Session) Close() {
	s.x.close()
	s.st.s.Close()
}

// failed classifies the error a call of tool ended with, by [Classify],
// except when the call was abandoned, by its caller's cancellation or a
// deadline, or when the connection to the server ended after the call may
// have reached it ([ErrOutcomeUnknown]): the tool may then have run, and
// its outcome is unknown. For a read-only tool that is a
// transient failure, free to retry; for any other tool it counts as a
// terminal failure, so that the retry cap bounds how often a call whose
// outcome nobody saw is sent again (a client that cancels each call as
// soon as it is sent would otherwise run a side effect without limit).
func (st *session) failed(tool string, err error) preflight.Outcome {
	if !abandoned(err) {
		return Classify(nil, err)
	}
	ts := st.s.Tools()
	spec, _ := ts.Spec(tool)
	if e, ok := ts.Catalog().EffectsOf(spec.Operation.Provider, tool); ok && e == preflight.EffectsReadOnly {
		return preflight.OutcomeTransientFailure
	}
	return preflight.OutcomeTerminalFailure
}
