package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/internal/redecide"
)

// decideKeeping is package preflight's redecide.Decide: (*Catalog).Decide,
// reading a call's payload and computing its fingerprint once for all the
// decisions of one Begin.
var decideKeeping = redecide.Decide.(func(*preflight.Catalog, preflight.ToolCallRequest, redecide.Memo) (*preflight.ToolCallDecision, redecide.Memo, error))

// Permit is the right to make one tool call that [Guard.Begin] allowed. Its
// estimate is held in flight (see "Budget reservation" on [Guard]) until
// [Permit.End] or [Permit.Release]. Exactly one of them must be called,
// once; later calls do nothing.
type Permit struct {
	g        *Guard
	req      preflight.ToolCallRequest
	rep      Report
	estimate decimal.Dec
	id       string  // the reservation in the Guard's store
	seen     Balance // the balance its decision saw (without its own hold)
	flight   *Flight // non-nil when identical calls may wait on this one
	done     bool
}

// Decision returns the decision that allowed the call.
func (p *Permit) Decision() *preflight.ToolCallDecision { return p.rep.Decision }

// Request returns the request the decision answers (see Report.Request);
// nil for a Permit resumed from a Handoff.
func (p *Permit) Request() *preflight.ToolCallRequest { return p.rep.Request }

// Flight is a call in flight that identical calls wait on instead of
// running (coalescing). See Report.InFlight.
type Flight struct {
	done chan struct{}
	res  Completion
	err  error
	ran  bool // false when the leader was released without a result
}

// Wait blocks until the leader's call ended, or ctx is done, and returns
// the leader's Completion and error as its function reported them. When
// the leader was released without running (Permit.Release), Wait returns
// ErrNotRun.
func (f *Flight) Wait(ctx context.Context) (Completion, error) {
	select {
	case <-f.done:
	case <-ctx.Done():
		return Completion{}, ctx.Err()
	}
	if !f.ran {
		return Completion{}, ErrNotRun
	}
	return f.res, f.err
}

// ErrNotRun is what [Flight.Wait] returns when the call it waited on was
// released without running.
var ErrNotRun = errors.New("agent: the call waited on did not run")

// Begin is the first half of [Guard.Call], for runtimes whose tool calls
// have a before hook and an after hook: it fills req as Call does, decides
// and, when the call may run, reserves its estimate and returns a Permit.
// Run the call, then pass its outcome to [Permit.End].
//
// A nil Permit means do not run the call: the Report says why (its
// Decision, ReuseReference, OverBudget, or InFlight when an identical
// read-only call is in flight). An error is a malformed request (a
// *preflight.Error), a context done before the decision (also while Begin
// waits for the decision of an identical call, one with the same request
// fingerprint, on this Guard, or for SetCatalog, SetBudget or RaiseBudget,
// or, deferred for want of money or of a call, for other decisions of this
// Guard holding tentative reservations; see "Budget reservation" on Guard),
// or a [LedgerStore] that could not be read or could not reserve (wrapping
// ErrStoreUnavailable: the call must not be made), also when another call
// of this Guard learnt that the store's state was lost while this one
// reserved (ErrStoreStateLost); the Permit is then nil.
//
// With GuardOptions.MaxCalls, every permit counts as a call, whether it
// ends or is released.
func (g *Guard) Begin(ctx context.Context, req preflight.ToolCallRequest) (*Permit, Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, Report{}, err
	}
	estimate, estErr := requestEstimate(req.Tool)

	if estErr != nil {
		estimate = decimal.Dec{} // Decide rejects such estimates below
	}

	// The fingerprint comes from the call alone: a first decision without
	// history or money names the history entries to read, and reports a
	// malformed request without touching the store.
	pre := req
	var expect LedgerState
	if b := g.seen.Load(); b != nil {
		expect.Balance = *b
	}
	g.fill(&pre, expect)
	preCatalog := g.catalog.Load()
	// The call's payload is read and fingerprinted once, for both
	// decisions.
	// Losses of the store's state seen before this call reserves.
	lost := g.lost.Load()
	first, memo, err := decideKeeping(preCatalog, pre, redecide.Memo{})
	defer func() { memo.Release() }()
	if err != nil {
		return nil, Report{}, err
	}
	fp := first.RequestFingerprint

	// Deciding and reserving are one step per fingerprint: calls with
	// other fingerprints decide and reserve meanwhile, sharing only the
	// money, which the store holds atomically (see lock.go). A call
	// waiting behind an identical one stuck on a slow store keeps its own
	// deadline.
	t, err := g.enter(ctx, fp)
	if err != nil {
		return nil, Report{}, err
	}
	defer g.leave(fp, t)
	catalog := g.catalog.Load() // SetCatalog waits at the gate
	callerReserved := req.Budget.ReservedUSD
	// The estimate is reserved before the decision, in the same trip to
	// the store as the read of the balance and history, and withdrawn
	// when the decision is not to run. A reservation refused by a store
	// shared with other processes means they spent in the meantime:
	// decide again on the fresh balance. A call deferred for want of money
	// or of a call while another decision of this Guard held a tentative
	// reservation waits until those decisions are settled and decides
	// again (lock.go), as if they had decided one at a time.
	// A read-only call the caller may have answered with another's
	// result shares an identical call's flight. The tool, the caller's
	// capabilities and the catalog stay as they are for every pass.
	shareable := g.coalesce && req.Capabilities != nil && req.Capabilities.CanReusePriorResult
	if shareable {
		eff, ok := catalog.EffectsOf(req.Tool.Provider, req.Tool.Operation)
		shareable = ok && eff == preflight.EffectsReadOnly
	}
	refused, redecided := 0, 0
	for {
		// The call in flight with this fingerprint, looked up before the
		// history is read: one that lands meanwhile (End records its
		// outcome, then lands) may be missing from both the history read
		// and g.flights by the time of the decision. None starts while
		// this call holds the fingerprint's turn.
		var flying *Flight
		if shareable {
			g.mu.Lock()
			flying = g.flights[fp]
			g.mu.Unlock()
		}
		id, held, st, err := g.reserveOf(ctx, fp, estimate)
		// A failed reservation may have held for a moment.
		t.held = held || err != nil
		if err != nil {
			return nil, Report{}, err
		}
		// keep reports whether the reservation is used; a reservation not
		// used is withdrawn.
		keep := false
		withdraw := func() {
			if held && !keep {
				g.cancel(id)
			}
		}
		req.Budget.ReservedUSD = callerReserved
		g.fill(&req, st)
		// Decide is a function of the request: filled the same as the
		// first time (no history of this call, the money as expected),
		// the request decides the same, and is not decided twice. That
		// is the first call of each kind, with nothing in flight that
		// was not expected.
		dec := first
		if len(req.History) != 0 || req.Budget != pre.Budget || catalog != preCatalog {
			dec, memo, err = decideKeeping(catalog, req, memo)
		}
		if err != nil {
			withdraw()
			return nil, Report{}, err
		}
		bal := st.Balance
		decided := req
		rep := Report{Decision: dec, Request: &decided, Balance: &bal, EstimateUSD: formatUSD(estimate)}
		if rem, err := parseUSD(req.Budget.RemainingUSD); err == nil {
			if res, err := parseUSD(req.Budget.ReservedUSD); err == nil {
				rep.FreeUSD = formatUSD(decimal.Sub(rem, res))
			}
		}
		if dec.Verdict == preflight.VerdictReuse && dec.Recommendation != nil {
			rep.ReuseReference = dec.Recommendation.ResultReference
		}
		run := dec.Enforcement == preflight.EnforcementExecute
		switch {
		case dec.Enforcement != preflight.EnforcementAdvisory:
		case !isUnsupported(dec):
			run = g.advise == RunAdvised
		case g.unsupported.runs(dec):
			// Decide checks the budget only for operations in its catalog; an
			// unsupported one is advised whatever it costs.
			rep.OverBudget = !req.Budget.Fits(req.Tool)
			run = !rep.OverBudget
		}
		if !run {
			if short(dec, rep.OverBudget) && redecided < maxReserveAttempts {
				if limit, ok := g.othersTentative(t); ok {
					withdraw()
					redecided++
					if err := g.awaitOthers(ctx, t, limit); err != nil {
						return nil, rep, err
					}
					continue
				}
			}
			withdraw()
			return nil, rep, nil
		}
		if flying != nil {
			rep.InFlight = flying
			withdraw()
			return nil, rep, nil
		}
		if err := ctx.Err(); err != nil {
			withdraw()
			return nil, rep, err
		}
		if !held {
			if redecided < maxReserveAttempts {
				if limit, ok := g.othersTentative(t); ok {
					redecided++
					if err := g.awaitOthers(ctx, t, limit); err != nil {
						return nil, rep, err
					}
					continue
				}
			}
			if refused++; refused < maxReserveAttempts {
				continue
			}
			if g.maxCalls > 0 && st.Balance.Calls >= g.maxCalls {
				rep.OverCallLimit = true // the store refused one more call, not the money
			} else {
				rep.OverBudget = true
			}
			return nil, rep, nil
		}
		if g.lost.Load() != lost {
			// Another call of this Guard found the store's state lost
			// while this one was reserving: its hold may be in the state
			// that is gone, so its cost could never be counted. It is not
			// run, as the calls that follow will not be.
			withdraw()
			return nil, rep, fmt.Errorf("agent: call not made: another call found the store's state lost while this one reserved: %w", ErrStoreStateLost)
		}
		keep = true
		t.kept = true // settled as the turn is given back
		rep.ReservedUSD = formatUSD(estimate)
		p := &Permit{g: g, req: req, rep: rep, estimate: estimate, id: id, seen: st.Balance}
		if shareable {
			p.flight = &Flight{done: make(chan struct{})}
			// No flight of this fingerprint was in flight when the
			// history was read, and none started since: this call holds
			// the fingerprint's turn.
			g.mu.Lock()
			g.flights[dec.RequestFingerprint] = p.flight
			g.mu.Unlock()
		}
		return p, p.rep, nil
	}
}

// Release gives the permit back without running the call: the
// reservation is freed and nothing is recorded. Calls waiting on it get
// ErrNotRun.
func (p *Permit) Release() {
	if p == nil || p.done {
		return
	}
	p.done = true
	// An error leaves the hold to its lease.
	ctx, cancel := p.g.bound(context.Background(), p.g.timeout)
	_ = p.g.store.Release(ctx, p.id)
	cancel()
	p.g.mu.Lock()
	p.g.land(p, Completion{}, nil, false)
	p.g.mu.Unlock()
}

// land ends p's flight. The caller holds g.mu.
func (g *Guard) land(p *Permit, res Completion, err error, ran bool) {
	if p.flight == nil {
		return
	}
	if g.flights[p.rep.Decision.RequestFingerprint] == p.flight {
		delete(g.flights, p.rep.Decision.RequestFingerprint)
	}
	p.flight.res, p.flight.err, p.flight.ran = res, err, ran
	close(p.flight.done)
}

// End is the second half of [Guard.Call]: it records the outcome of the
// call the permit allowed and settles its money. res and callErr are what
// the call reported (see [Completion] for defaults); callErr is returned
// unchanged, joined with a recording error when res is malformed (then
// nothing is recorded). Calls coalesced onto this one get res and callErr.
func (p *Permit) End(res Completion, callErr error) (Report, error) {
	if p == nil || p.done {
		return Report{}, errors.New("agent: Permit.End called on a finished permit")
	}
	p.done = true
	g, req, rep := p.g, p.req, p.rep
	rep.Called = true
	if res.Outcome == "" {
		res.Outcome = preflight.OutcomeSuccess
		if callErr != nil {
			res.Outcome = preflight.OutcomeTransientFailure
		}
	}
	if res.ToolCallID == "" {
		res.ToolCallID = req.StepID
	}
	cost, costErr := p.estimate, error(nil)
	if res.CostUSD != "" {
		if c, err := parseUSD(res.CostUSD); err == nil && c.Sign() >= 0 {
			cost = c
		} else {
			// Count the estimate rather than nothing; record nothing.
			costErr = fmt.Errorf("agent: Completion.CostUSD %q must be a non-negative decimal; outcome not recorded", string(res.CostUSD))
		}
	}
	rep.Completion = res

	// Recorded and settled before the flight lands, so that a call decided
	// after the followers wake up sees this outcome in the history.
	var entry *Entry
	if costErr == nil {
		var goal string
		if req.Task != nil {
			goal = req.Task.GoalHash
		}
		entry = &Entry{
			ToolCallID:      res.ToolCallID,
			Fingerprint:     rep.Decision.RequestFingerprint,
			Outcome:         res.Outcome,
			ResultReference: res.ResultReference,
			GoalHash:        goal,
		}
	}
	recErr := g.settle(p, cost, entry, &rep)

	g.mu.Lock()
	g.land(p, res, callErr, true)
	g.mu.Unlock()

	switch {
	case costErr != nil:
		return rep, errors.Join(callErr, costErr)
	case recErr != nil:
		return rep, errors.Join(callErr, recErr)
	}
	return rep, callErr
}

// run calls call and ends the permit. A panic in call settles the
// permit at its estimate, recording nothing: the tool may have reached its
// provider before it panicked.
func (p *Permit) run(ctx context.Context, call CallFunc) (Report, error) {
	defer func() {
		if p.done {
			return
		}
		p.done = true
		_ = p.g.settle(p, p.estimate, nil, &Report{})
		p.g.mu.Lock()
		p.g.land(p, Completion{}, nil, false)
		p.g.mu.Unlock()
	}()
	res, err := call(ctx)
	return p.End(res, err)
}

// Handoff is what another process needs to end a call a [Permit] allowed,
// when both guard the same scope on a shared [LedgerStore]: the
// reservation held in the store, the estimate it holds and what End
// records. It is plain data, to be sent as JSON.
type Handoff struct {
	// ReservationID names the call's reservation in the store.
	ReservationID string `json:"reservationID"`
	// EstimateUSD is the money the reservation holds, settled when the
	// call reports no cost.
	EstimateUSD json.Number `json:"estimateUSD"`
	// StepID is the default Completion.ToolCallID.
	StepID string `json:"stepID,omitempty"`
	// GoalHash is the task's goal hash, recorded with the outcome.
	GoalHash string `json:"goalHash,omitempty"`
	// Decision is the decision that allowed the call: its request
	// fingerprint is recorded with the outcome, and the resumed Permit
	// reports it.
	Decision *preflight.ToolCallDecision `json:"decision"`
}

// Handoff describes p for [Guard.Resume] in another process. It leaves p
// as it is: the process that hands the call off ends p with
// [Permit.Forget] once the other one resumed it.
func (p *Permit) Handoff() Handoff {
	h := Handoff{ReservationID: p.id, EstimateUSD: formatUSD(p.estimate), StepID: p.req.StepID}
	if p.req.Task != nil {
		h.GoalHash = p.req.Task.GoalHash
	}
	h.Decision = p.rep.Decision
	return h
}

// Forget ends p in this process without touching the store: another
// process resumed the call ([Guard.Resume]) and settles or releases its
// reservation. Calls coalesced onto p get ErrNotRun.
func (p *Permit) Forget() {
	if p == nil || p.done {
		return
	}
	p.done = true
	if r, ok := p.g.store.(leaseRenewer); ok {
		r.StopLease(p.id) // the process that resumed it renews it
	}
	p.g.mu.Lock()
	p.g.land(p, Completion{}, nil, false)
	p.g.mu.Unlock()
}

// Resume returns a Permit for the call another process allowed and
// handed off (see [Permit.Handoff]), on a store g shares with it: its End
// settles the reservation h names and records the outcome, its Release
// gives the reservation back. Nothing is decided or reserved again; a
// store that renews leases renews the reservation's from now on. It fails
// when h is malformed.
func (g *Guard) Resume(h Handoff) (*Permit, error) {
	est, err := parseUSD(h.EstimateUSD)
	if err != nil || est.Sign() < 0 || h.EstimateUSD == "" {
		return nil, fmt.Errorf("agent: Handoff.EstimateUSD %q must be a non-negative decimal", string(h.EstimateUSD))
	}
	if h.ReservationID == "" || h.Decision == nil || h.Decision.RequestFingerprint == "" {
		return nil, errors.New("agent: a Handoff needs its ReservationID and a Decision with its RequestFingerprint")
	}
	req := preflight.ToolCallRequest{StepID: h.StepID}
	if h.GoalHash != "" {
		req.Task = &preflight.Task{GoalHash: h.GoalHash}
	}
	if r, ok := g.store.(leaseRenewer); ok {
		r.RenewLease(h.ReservationID, g.lease) // until End or Release
	}
	rep := Report{Decision: h.Decision, EstimateUSD: formatUSD(est), ReservedUSD: formatUSD(est)}
	return &Permit{g: g, req: req, rep: rep, estimate: est, id: h.ReservationID}, nil
}

// short reports whether a decision not to run was for want of money or of
// a call left, which another decision's tentative hold may cause: Decide's
// call limit, budget or (under SkipAdvised) reduce-scope rule, or the
// Guard's own budget check of an unsupported operation (overBudget).
func short(dec *preflight.ToolCallDecision, overBudget bool) bool {
	if overBudget {
		return true
	}
	if len(dec.ReasonCodes) == 0 {
		return false
	}
	switch dec.ReasonCodes[0] {
	case preflight.ReasonCallLimitReached, preflight.ReasonBudgetExceeded, preflight.ReasonReduceScope:
		return true
	}
	return false
}
