package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/internal/decimal"
)

// SessionOptions configures a [Session]. The zero value and nil both work.
type SessionOptions struct {
	// Guard configures the session's agent.Guard: its budget (BudgetUSD),
	// call limit (MaxCalls), policies and LedgerStore. Its Catalog is
	// ignored: the Set's is used.
	Guard agent.GuardOptions
	// Results keeps the tools' results for reuse and coalescing. Nil
	// means a NewMemoryResultStore(0, 0) of the session's own. Sessions
	// may share one; given a *SharedResultStore, the session takes a view
	// of its own (its own quota, results no other session's traffic
	// evicts within their TTL), dropped by Close.
	Results ResultStore
	// RunID names the run in every proposal. Empty means "session".
	RunID string
	// Ledger is where outcomes are recorded. Nil means a new one.
	Ledger *agent.Ledger
}

// Session guards the tool calls of one agent session (one MCP session, one
// run): each call, named by a tool name and raw JSON arguments, becomes a
// proposal through the session's [Set], is decided by an [agent.Guard] that
// keeps the session's ledger, budget and call limit, and either runs, or
// is answered with a saved result (reuse), with the result of an identical
// call in flight (coalescing), or with a message saying why it was not run.
// A Session is safe for concurrent use.
type Session struct {
	guard   *agent.Guard
	results ResultStore
	view    *ResultView // the session's own view of a SharedResultStore, or nil
	runID   string
	owned   bool // the Guard owns the budget (GuardOptions.BudgetUSD)
	tools   atomic.Pointer[Set]
	steps   atomic.Uint64
	mu      sync.Mutex // serializes SetTools with the guard's catalog
}

// NewSession returns a session deciding with tools (nil means a set with
// no tools). It fails only when opts.Guard is one agent.NewGuard refuses.
func NewSession(tools *Set, opts *SessionOptions) (*Session, error) {
	var o SessionOptions
	if opts != nil {
		o = *opts
	}
	if tools == nil {
		tools, _ = NewSet(Spec{})
	}
	o.Guard.Catalog = tools.Catalog()
	g, err := agent.NewGuard(o.Ledger, &o.Guard)
	if err != nil {
		return nil, err
	}
	var view *ResultView
	switch st := o.Results.(type) {
	case nil:
		o.Results = NewMemoryResultStore(0, 0)
	case *SharedResultStore:
		view = st.View()
		o.Results = view
	}
	if o.RunID == "" {
		o.RunID = "session"
	}
	s := &Session{guard: g, results: o.Results, view: view, runID: o.RunID, owned: g.BudgetUSD() != ""}
	s.tools.Store(tools)
	return s, nil
}

// Close drops the session's results from a SharedResultStore given as
// SessionOptions.Results (its view's results); with any other store it does
// nothing. Calls after Close still work, without saving results: they
// are never reused (calls coalesced onto them still get them).
func (s *Session) Close() {
	if s.view != nil {
		s.view.Close()
	}
}

// Guard returns the session's Guard (its ledger and money).
func (s *Session) Guard() *agent.Guard { return s.guard }

// Tools returns the tool set the session decides with.
func (s *Session) Tools() *Set { return s.tools.Load() }

// SetTools replaces the tool set, for example after the tool list
// changed (through agent.Guard.SetCatalog). The ledger and money are kept.
func (s *Session) SetTools(t *Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guard.SetCatalog(t.Catalog())
	s.tools.Store(t)
}

// How says how a [Session.Call] was answered.
type How int

// The ways a call is answered.
const (
	// HowRan: the tool ran; Answer.Result is its result.
	HowRan How = iota
	// HowReused: a saved result of the same call stands in for it;
	// Answer.Result is those bytes exactly as saved.
	HowReused
	// HowCoalesced: an identical call was in flight (Report.InFlight);
	// Answer.Result is its result.
	HowCoalesced
	// HowWithheld: the call was not run; Answer.Message says why and what
	// to do instead, Answer.Report.ReasonCodes() gives the reason codes.
	HowWithheld
)

var howNames = [...]string{"ran", "reused", "coalesced", "withheld"}

// String returns "ran", "reused", "coalesced" or "withheld".
func (h How) String() string {
	if int(h) < len(howNames) {
		return howNames[h]
	}
	return "How(" + strconv.Itoa(int(h)) + ")"
}

// Answer is how a [Session.Call] ended.
type Answer struct {
	// How says which of the ways below answered the call.
	How How
	// Result is the result bytes: as run returned them, or as saved. Nil
	// when the call was withheld.
	Result []byte
	// Outcome is how the result was classified (run's, or the leader's on
	// coalescing); empty when withheld, success on reuse.
	Outcome preflight.Outcome
	// Message is the sentence for the model when the call was withheld.
	Message string
	// Report is what the Guard did; Report.Decision has the decision.
	Report agent.Report
}

// RunFunc makes the real call. It returns the result to hand to the model
// (opaque bytes, saved as they are) and how the call ended; a non-nil error
// means there is no result (a transport failure), and is returned by Call.
type RunFunc func(ctx context.Context) (result []byte, outcome preflight.Outcome, err error)

// Call guards one call of the tool name with raw JSON arguments args.
//
// Every call is a proposal with the session's run id, a goal hash shared by
// the whole session, and reuse permitted; the Set gives its operation,
// price, TTL and retry cap. A reuse decision whose saved result the store
// no longer has is decided again without reuse. An error is returned when
// the proposal is malformed (a *preflight.Error, for example arguments that
// are not a JSON object), when ctx is done, or when run failed.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage, run RunFunc) (Answer, error) {
	r, ans, err := s.Start(ctx, name, args)
	if r == nil {
		return ans, err
	}
	defer r.Release() // after Finish a no-op; on a panic in run it frees the reservation
	b, outcome, err := run(ctx)
	return r.Finish(ctx, b, outcome, err)
}

// Running is a call [Session.Start] allowed to run: run it, then pass its
// result to [Running.Finish], or give it back with [Running.Release].
// Exactly one of them must be called; later calls do nothing. It holds
// the call's agent.Permit.
type Running struct {
	s    *Session
	p    *agent.Permit
	ttl  json.Number // the proposal's FreshnessTTLSeconds
	done bool
}

// Start is the first half of [Session.Call], for runtimes whose tool calls
// have a before hook and an after hook: it decides the call of name with
// args as Call does and, when the call may run, returns it Running. A nil
// Running means do not run the call: the Answer is the reused or
// coalesced result (waiting for the identical call in flight), or the
// message saying why not. Errors are Call's, except run's. (Start and
// Finish are this layer's names for agent.Guard.Begin and
// agent.Permit.End, which they call.)
//
// A coalesced call waits in Start, until ctx is done, for the identical
// call in flight to end: run an allowed call (or start it in a goroutine)
// before beginning the next, never after beginning all of a turn's calls.
func (s *Session) Start(ctx context.Context, name string, args json.RawMessage) (*Running, Answer, error) {
	req := s.tools.Load().Proposal(name, args)
	req.RunID = s.runID
	req.StepID = "call-" + strconv.FormatUint(s.steps.Add(1), 10)
	req.Task = &preflight.Task{GoalHash: s.runID}
	req.Capabilities = &preflight.Capabilities{CanReusePriorResult: true}
	if !s.owned {
		req.Budget.RemainingUSD = "1000000000"
	}
	for {
		p, rep, err := s.guard.Begin(ctx, req)
		if err != nil {
			return nil, Answer{Report: rep}, err
		}
		if p != nil {
			return &Running{s: s, p: p, ttl: req.FreshnessTTLSeconds}, Answer{}, nil
		}
		switch {
		case rep.ReuseReference != "":
			if b, ok := s.results.Get(ctx, rep.ReuseReference); ok {
				return nil, Answer{How: HowReused, Result: b, Outcome: preflight.OutcomeSuccess, Report: rep}, nil
			}
			req.Capabilities = &preflight.Capabilities{} // evicted: decide without reuse
			continue
		case rep.InFlight != nil:
			res, err := rep.InFlight.Wait(ctx)
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, Answer{Report: rep}, ctxErr
			}
			if err != nil {
				// The leader gave up, was cancelled by its own caller or
				// got no result: decide again (and maybe run) for this one.
				continue
			}
			if b, ok := s.results.Get(ctx, res.ResultReference); ok {
				return nil, Answer{How: HowCoalesced, Result: b, Outcome: res.Outcome, Report: rep}, nil
			}
			if res.Result != nil { // the leader's result, not saved
				return nil, Answer{How: HowCoalesced, Result: bytes.Clone(res.Result), Outcome: res.Outcome, Report: rep}, nil
			}
			req.Capabilities = &preflight.Capabilities{} // not saved: decide without reuse
			continue
		}
		return nil, Answer{How: HowWithheld, Message: message(rep, name), Report: rep}, nil
	}
}

// Release gives the call back without running it (see
// agent.Permit.Release).
func (r *Running) Release() {
	if r == nil || r.done {
		return
	}
	r.done = true
	r.p.Release()
}

// Finish records how the call ended, as [Session.Call] does with what its
// RunFunc returned, and saves result for reuse and coalesced calls. A
// non-nil err means there is no result; it is returned.
func (r *Running) Finish(ctx context.Context, result []byte, outcome preflight.Outcome, err error) (Answer, error) {
	if r == nil || r.done {
		return Answer{}, errors.New("tools: Running.Finish called on a finished call")
	}
	r.done = true
	return r.s.finish(ctx, r, result, outcome, err)
}

func (s *Session) finish(ctx context.Context, r *Running, b []byte, outcome preflight.Outcome, err error) (Answer, error) {
	res := agent.Completion{Outcome: outcome}
	if err == nil {
		if res.Outcome == "" {
			res.Outcome = preflight.OutcomeSuccess
		}
		// Saved whatever the outcome so coalesced calls get the same
		// answer; only a success is ever reused (Decide's rule).
		if ref, perr := s.save(ctx, b, res.Outcome, r.ttl); perr == nil {
			res.ResultReference = ref
		} else {
			// A store full of other sessions' live results: the waiters
			// still get the result, only it cannot be reused.
			res.Result = append([]byte{}, b...)
		}
	}
	rep, err := r.p.End(res, err)
	if err != nil {
		return Answer{Report: rep}, err
	}
	return Answer{How: HowRan, Result: b, Outcome: rep.Completion.Outcome, Report: rep}, nil
}

// coalesceGrace is how long a result is kept for the calls coalesced onto
// it, which read it as soon as its call ends, when it may not be reused
// (a failure, or a TTL shorter than this).
const coalesceGrace = 10 * time.Second

// ttlMargin is added to a reusable result's TTL: the ledger truncates ages
// to milliseconds and dates a call after its result was saved, so a
// result can be decided reusable slightly more than TTL after its save.
const ttlMargin = time.Second

// save puts b in the store, telling a TTLResultStore how long to keep it:
// the TTL plus ttlMargin for a success with a TTL (reusable), at least
// coalesceGrace for any result.
func (s *Session) save(ctx context.Context, b []byte, outcome preflight.Outcome, ttl json.Number) (string, error) {
	ts, ok := s.results.(TTLResultStore)
	if !ok {
		return s.results.Put(ctx, b)
	}
	keep := coalesceGrace
	if outcome == preflight.OutcomeSuccess {
		if secs, err := decimal.ParseFloat(string(ttl)); err == nil && secs > 0 {
			// Decide caps a TTL at 1e9 seconds, well within a Duration.
			keep = max(keep, time.Duration(min(secs, 1e9)*float64(time.Second))+ttlMargin)
		}
	}
	return ts.PutTTL(ctx, b, keep)
}

// Handoff is what another process guarding the same scope needs to end a
// call [Session.Start] allowed (see agent.Handoff): plain data, to be
// sent as JSON.
type Handoff struct {
	agent.Handoff
	// FreshnessTTLSeconds is the proposal's, for saving the result.
	FreshnessTTLSeconds json.Number `json:"freshnessTTLSeconds,omitempty"`
}

// Decided returns the decision that allowed the call and the request it
// answers (see agent.Report.Request); the request is nil for a call
// resumed from another process.
func (r *Running) Decided() (*preflight.ToolCallRequest, *preflight.ToolCallDecision) {
	return r.p.Request(), r.p.Decision()
}

// Handoff describes r for [Session.Resume] in another process; r is left
// as it is (end it with [Running.Forget] once the other process resumed
// it).
func (r *Running) Handoff() Handoff {
	return Handoff{Handoff: r.p.Handoff(), FreshnessTTLSeconds: r.ttl}
}

// Forget ends r in this process without touching the ledger's store:
// another process resumed the call and ends it (see agent.Permit.Forget).
func (r *Running) Forget() {
	if r == nil || r.done {
		return
	}
	r.done = true
	r.p.Forget()
}

// Resume returns the call another process allowed and handed off
// ([Running.Handoff]), Running in s: nothing is decided or reserved again;
// Finish settles and records it in s's ledger, which must share the other
// process's store. It fails when h is malformed.
func (s *Session) Resume(h Handoff) (*Running, error) {
	p, err := s.guard.Resume(h.Handoff)
	if err != nil {
		return nil, err
	}
	return &Running{s: s, p: p, ttl: h.FreshnessTTLSeconds}, nil
}
