package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/internal/decimal"
)

// AdvisePolicy says what [Guard.Call] does with optional reduce-scope
// advice (advise / REDUCE_SCOPE). Operations the catalog lacks have their
// own policy, [UnsupportedPolicy].
type AdvisePolicy int

// The advise policies.
const (
	// RunAdvised runs the call anyway. It is the zero value.
	RunAdvised AdvisePolicy = iota
	// SkipAdvised does not run the call; the caller sees the decision and
	// its recommendation and may propose a narrower call.
	SkipAdvised
)

// GuardOptions configures a [Guard]. The zero value and nil both work.
type GuardOptions struct {
	// Advise is the policy for reduce-scope advice. Zero means RunAdvised.
	Advise AdvisePolicy
	// Unsupported is the policy for operations the catalog lacks. Zero
	// means RunUnsupportedUnlessSimilar.
	Unsupported UnsupportedPolicy
	// Catalog is the set of operations decided; nil means
	// preflight.DefaultCatalog().
	Catalog *preflight.Catalog
	// BudgetUSD, when non-empty, makes the Guard own the run's money: each
	// request's Budget.RemainingUSD is replaced by BudgetUSD minus what the
	// calls that ran through this Guard cost (Result.CostUSD, or the
	// request's estimate). Empty means the caller supplies RemainingUSD.
	BudgetUSD json.Number
}

// Result is what the caller's tool function reports about the real call.
type Result struct {
	// Outcome classifies the call. Empty means success when the function
	// returned a nil error and transient_failure otherwise (a transient
	// failure never blocks a retry and never enables reuse).
	Outcome preflight.Outcome
	// ResultReference is where the caller saved the result; a later
	// reuse decision hands it back. Empty means the result cannot be reused.
	ResultReference string
	// ToolCallID names the call in the ledger. Empty means the request's
	// StepID.
	ToolCallID string
	// CostUSD is what the call really cost (provider plus model). Empty
	// means the request's estimate. It only matters with
	// GuardOptions.BudgetUSD.
	CostUSD json.Number
}

// Report is what [Guard.Call] did.
type Report struct {
	// Decision is preflight's decision, with its reason codes. It is nil
	// only when Call returned before deciding (cancelled context, or an
	// error from Decide).
	Decision *preflight.ToolCallDecision
	// Called is true when the caller's function ran.
	Called bool
	// Recorded is true when the call's outcome went into the ledger.
	Recorded bool
	// Result is what the function reported, with defaults filled in. Zero
	// when the function did not run.
	Result Result
	// ReuseReference is the prior result's reference on a reuse decision:
	// use the result saved there instead of calling.
	ReuseReference string
	// OverBudget is true when an operation the catalog lacks was not run,
	// under a policy that runs it, because the estimate exceeds the free
	// budget.
	OverBudget bool
}

// Guard runs tool calls through preflight with a [Ledger]: it fills the
// history, asks its catalog (GuardOptions.Catalog) to decide, runs the call
// only when the decision allows it, and records the outcome. A Guard is safe for concurrent use;
// use one per customer and run, like its Ledger.
//
// The Guard never retries, never runs a call that Decide says to skip, and
// does no I/O of its own; the only code it runs that touches the outside
// world is the function passed to Call.
//
// # Budget reservation
//
// Decide is stateless: two parallel calls that each fit the budget would
// both be allowed, even if together they do not fit. The Guard closes that
// gap for calls made through it. From the moment a call is decided to run
// until its function returns, its estimate (external plus model) is held in
// flight and added to Budget.ReservedUSD of every other request; deciding
// and reserving happen under one lock. That is enough when the Guard owns
// the budget (GuardOptions.BudgetUSD). When the caller supplies
// RemainingUSD itself, it must deduct a call's cost before the call's
// function returns, and must read RemainingUSD as late as possible:
// a request built from a balance read before another call finished still
// counts that call's money as free.
type Guard struct {
	ledger      *Ledger
	advise      AdvisePolicy
	unsupported UnsupportedPolicy
	catalog     *preflight.Catalog
	budget      *decimal.Dec // nil unless GuardOptions.BudgetUSD was set

	mu       sync.Mutex
	inFlight decimal.Dec
	spent    decimal.Dec
}

// CallFunc makes the real tool call. It should save the result where it can
// find it again and return that place as Result.ResultReference.
type CallFunc func(ctx context.Context) (Result, error)

// NewGuard returns a Guard recording into ledger. A nil ledger means a new
// one with the system clock (see [Guard.Ledger]). opts may be nil. It fails
// only when opts.BudgetUSD is not a non-negative decimal.
func NewGuard(ledger *Ledger, opts *GuardOptions) (*Guard, error) {
	if ledger == nil {
		ledger = NewLedger(nil)
	}
	g := &Guard{ledger: ledger}
	if opts != nil {
		g.advise, g.unsupported, g.catalog = opts.Advise, opts.Unsupported, opts.Catalog
		if opts.BudgetUSD != "" {
			b, err := parseUSD(opts.BudgetUSD)
			if err != nil || b.Sign() < 0 {
				return nil, fmt.Errorf("agent: BudgetUSD %q must be a non-negative decimal", string(opts.BudgetUSD))
			}
			g.budget = &b
		}
	}
	return g, nil
}

// Ledger returns the ledger the Guard records into.
func (g *Guard) Ledger() *Ledger { return g.ledger }

// SpentUSD returns what the calls run through this Guard cost so far, as
// exact decimal text.
func (g *Guard) SpentUSD() json.Number {
	g.mu.Lock()
	defer g.mu.Unlock()
	return formatUSD(g.spent)
}

// Call proposes req and, if the decision says so, runs call.
//
//  1. req.History is replaced by the ledger's history; with
//     GuardOptions.BudgetUSD, req.Budget.RemainingUSD is replaced by the
//     money left; the estimates of calls in flight are added to
//     req.Budget.ReservedUSD.
//  2. preflight.Decide decides. An error from Decide (a malformed request)
//     is returned as is, a *preflight.Error.
//  3. allow (execute) runs call; reduce-scope advice runs it under
//     RunAdvised; an operation the catalog lacks runs as the
//     UnsupportedPolicy says, and only within the free budget (else
//     Report.OverBudget); reuse, block and defer (safe_to_skip) never run
//     it. On reuse Report.ReuseReference is the prior result's reference.
//  4. After call returns, its outcome is recorded under the decision's
//     RequestFingerprint, req.Task.GoalHash and the Result's reference, and
//     call's error is returned unchanged (joined with a recording error if
//     the Result is malformed, in which case nothing is recorded).
//
// When call does not run, nothing is recorded. A context that is already
// done when Call starts, or when the call is about to run, stops it before
// running call: Call returns ctx.Err() and records nothing. A context
// cancelled while call runs is call's business: its Result is recorded as
// it classified it. Call never retries.
func (g *Guard) Call(ctx context.Context, req preflight.ToolCallRequest, call CallFunc) (Report, error) {
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	estimate, estErr := requestEstimate(req.Tool)

	g.mu.Lock()
	req.History = g.ledger.History()
	if g.budget != nil {
		left := decimal.Sub(*g.budget, g.spent)
		if left.Sign() < 0 {
			left = decimal.Dec{}
		}
		req.Budget.RemainingUSD = formatUSD(left)
	}
	if g.inFlight.Sign() > 0 {
		// A malformed ReservedUSD is left alone for Decide to report.
		if r, err := parseUSD(req.Budget.ReservedUSD); err == nil {
			req.Budget.ReservedUSD = formatUSD(decimal.Add(r, g.inFlight))
		}
	}
	dec, err := g.catalog.Decide(&req)
	if err != nil {
		g.mu.Unlock()
		return Report{}, err
	}
	rep := Report{Decision: dec}
	if dec.Verdict == preflight.VerdictReuse && dec.Recommendation != nil {
		rep.ReuseReference = dec.Recommendation.ResultReference
	}
	if estErr != nil {
		estimate = decimal.Dec{} // cannot happen: Decide rejects such estimates
	}
	run := dec.Enforcement == preflight.EnforcementExecute
	switch {
	case dec.Enforcement != preflight.EnforcementAdvisory:
	case !isUnsupported(dec):
		run = g.advise == RunAdvised
	case g.unsupported.runs(dec):
		// Decide checks the budget only for operations in its catalog; an
		// unsupported one is advised whatever it costs.
		rep.OverBudget = !fits(req.Budget, estimate)
		run = !rep.OverBudget
	}
	if run {
		if err := ctx.Err(); err != nil {
			g.mu.Unlock()
			return rep, err
		}
		g.inFlight = decimal.Add(g.inFlight, estimate)
	}
	g.mu.Unlock()
	if !run {
		return rep, nil
	}

	released := false
	defer func() {
		if !released { // call panicked: free its reservation, record nothing
			g.mu.Lock()
			g.inFlight = decimal.Sub(g.inFlight, estimate)
			g.mu.Unlock()
		}
	}()
	res, callErr := call(ctx)
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
	cost, costErr := estimate, error(nil)
	if res.CostUSD != "" {
		if c, err := parseUSD(res.CostUSD); err == nil && c.Sign() >= 0 {
			cost = c
		} else {
			// Count the estimate rather than nothing; record nothing.
			costErr = fmt.Errorf("agent: Result.CostUSD %q must be a non-negative decimal; outcome not recorded", string(res.CostUSD))
		}
	}
	rep.Result = res

	g.mu.Lock()
	g.inFlight = decimal.Sub(g.inFlight, estimate)
	released = true
	g.spent = decimal.Add(g.spent, cost)
	g.mu.Unlock()

	if costErr != nil {
		return rep, errors.Join(callErr, costErr)
	}
	var goal string
	if req.Task != nil {
		goal = req.Task.GoalHash
	}
	recErr := g.ledger.Record(Entry{
		ToolCallID:      res.ToolCallID,
		Fingerprint:     dec.RequestFingerprint,
		Outcome:         res.Outcome,
		ResultReference: res.ResultReference,
		GoalHash:        goal,
	})
	rep.Recorded = recErr == nil
	if recErr != nil {
		return rep, errors.Join(callErr, recErr)
	}
	return rep, callErr
}

// requestEstimate is the external plus model estimate of a tool call.
func requestEstimate(t preflight.ToolCall) (decimal.Dec, error) {
	ext, err := parseUSD(t.EstimatedExternalCostUSD)
	if err != nil {
		return decimal.Dec{}, err
	}
	mod, err := parseUSD(t.EstimatedModelCostUSD)
	if err != nil {
		return decimal.Dec{}, err
	}
	return decimal.Add(ext, mod), nil
}

// fits reports whether estimate is no more than RemainingUSD − ReservedUSD,
// the affordability rule of the spec. Unparsable values never fit (Decide
// has already rejected them).
func fits(b preflight.Budget, estimate decimal.Dec) bool {
	rem, err := parseUSD(b.RemainingUSD)
	if err != nil {
		return false
	}
	res, err := parseUSD(b.ReservedUSD)
	if err != nil {
		return false
	}
	return decimal.Cmp(estimate, decimal.Sub(rem, res)) <= 0
}
