package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	// calls that ran through this Guard cost (Completion.CostUSD, or the
	// request's estimate). Empty means the caller supplies RemainingUSD.
	BudgetUSD json.Number
	// MaxCalls, when positive, makes the Guard own the run's call limit:
	// each request's Budget.MaxToolCallsRemaining is replaced by MaxCalls
	// minus the calls begun through this Guard (in flight or done).
	MaxCalls int
	// NoCoalesce turns off coalescing of identical calls in flight (see
	// [Guard.Begin]).
	NoCoalesce bool
	// Store keeps the Guard's money: what is spent, what calls in flight
	// hold and how many calls began. Nil means an in-process store of the
	// Guard's own. A store shared by processes (agent/redisledger) makes
	// every Guard on it spend one budget; when the ledger passed to
	// NewGuard is nil, the Guard's ledger keeps its history there too.
	// See [LedgerStore].
	Store LedgerStore
	// Lease is how long a call's reservation outlives a worker that died
	// during the call, on a store shared by processes; zero means the
	// store's default. A call's reservation is started (see
	// Reservation.Started): when its lease expires its estimate is
	// charged, never given back to other calls.
	Lease time.Duration
	// StoreTimeout bounds each read, reservation and release of the store
	// when the caller's context has no earlier deadline, so that a stalled
	// store fails closed in bounded time. Zero means 5 s.
	StoreTimeout time.Duration
	// SettleTimeout bounds the settlement of a call that ran (the store
	// may retry within it: the call's cost must be counted). Zero means
	// 30 s.
	SettleTimeout time.Duration
}

// The defaults of GuardOptions.StoreTimeout and SettleTimeout.
const (
	defaultStoreTimeout  = 5 * time.Second
	defaultSettleTimeout = 30 * time.Second
)

// Completion is what the caller's tool function reports about the real call
// once it returned: how it ended, where its result was saved and what it
// cost. (In this package and agent/tools, a "result" is always the tool's
// own output; a Completion is the caller's account of the call.)
type Completion struct {
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
	// Result, optional, is the call's result itself, for the calls
	// coalesced onto this one (see Flight.Wait) when it could not be saved
	// under a ResultReference. The Guard neither reads nor records it.
	Result []byte
}

// Report is what [Guard.Call] did.
type Report struct {
	// Decision is preflight's decision, with its reason codes. It is nil
	// only when Call returned before deciding (cancelled context, or an
	// error from Decide).
	Decision *preflight.ToolCallDecision
	// Request is the request Decision answers: the caller's, with the
	// history, budget and call limit the Guard filled in from its ledger.
	// json.Marshal of it, given to preflight.DecideJSON with the Guard's
	// catalog, gives Decision again (how a signed receipt of the decision
	// is checked). Nil when Decision is, and on a Permit resumed from a
	// Handoff (Guard.Resume): the request stayed with the process that
	// decided it.
	Request *preflight.ToolCallRequest
	// Called is true when the caller's function ran.
	Called bool
	// Recorded is true when the call's outcome went into the ledger.
	Recorded bool
	// Completion is what the function reported, with defaults filled in.
	// Zero when the function did not run.
	Completion Completion
	// ReuseReference is the prior result's reference on a reuse decision:
	// use the result saved there instead of calling.
	ReuseReference string
	// OverBudget is true when an operation the catalog lacks was not run,
	// under a policy that runs it, because the estimate does not fit the
	// free budget (preflight.Budget.Fits); and when a store shared with other processes kept refusing
	// the reservation the decision allowed (they spent the money first, or
	// hold it).
	OverBudget bool
	// OverCallLimit is true when an operation the catalog lacks was not
	// run, under a policy that runs it, because the Guard's call limit
	// (GuardOptions.MaxCalls) is reached: its store refused one more call.
	// Decide judges the limit only for operations in its catalog.
	OverCallLimit bool
	// EstimateUSD is the call's estimate (external plus model cost) and
	// FreeUSD the budget that was free for it (RemainingUSD minus
	// ReservedUSD, calls in flight included) when it was decided; empty
	// when Call returned before deciding.
	EstimateUSD, FreeUSD json.Number
	// InFlight is non-nil when the call was not run because an identical
	// call (same fingerprint) of a read-only operation was already in
	// flight through this Guard and the request allows reuse: wait on it
	// for the leader's completion instead of calling (coalescing). The
	// decision is the one Decide gave; the call is not recorded.
	InFlight *Flight
	// Balance is the balance the decision saw: spent, held in flight and
	// calls begun in the Guard's store. Nil when Begin did not get that far.
	Balance *Balance
	// ReservedUSD is the money the call held while it ran (its estimate);
	// empty when it did not run.
	ReservedUSD json.Number
	// SettledUSD is the cost the call was settled with once it ended,
	// exact and unrounded: Completion.CostUSD, or the estimate when the call
	// reported none or an invalid one. Empty when it did not run or its
	// settlement failed. A store that counts fewer fraction digits
	// (redisledger: 18) counts it rounded up to its precision, so the
	// balance may show slightly more than this.
	SettledUSD json.Number
	// LateSettlement is true when the call's lease had expired before it
	// ended: its estimate had been charged (or, for a store that does not
	// charge, given back), and its cost was counted in its place.
	LateSettlement bool
	// DuplicateSettlement is true when the store had already settled the
	// call (a retried settlement): nothing was counted again, and
	// SettledUSD is what the first settlement counted.
	DuplicateSettlement bool
}

// ReasonCodes returns the reason codes of a call the Guard did not run:
// the decision's, led by preflight.ReasonBudgetExceeded when the Guard
// withheld it because its estimate does not fit the free budget
// (OverBudget), or by preflight.ReasonCallLimitReached when the call
// limit is reached (OverCallLimit), which Decide does not judge for an
// operation its catalog lacks. It is nil when there is no decision. The slice is the caller's.
func (r Report) ReasonCodes() []preflight.ReasonCode {
	if r.Decision == nil {
		return nil
	}
	codes := make([]preflight.ReasonCode, 0, len(r.Decision.ReasonCodes)+1)
	switch {
	case r.OverCallLimit:
		codes = append(codes, preflight.ReasonCallLimitReached)
	case r.OverBudget:
		codes = append(codes, preflight.ReasonBudgetExceeded)
	}
	return append(codes, r.Decision.ReasonCodes...)
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
// flight and added to Budget.ReservedUSD of every other request. Calls
// with the same request fingerprint decide and reserve one at a time,
// since each one's decision depends on the others' (history, calls in
// flight); calls with different fingerprints decide and reserve at the
// same time, and share only money, which the store checks and holds in
// one atomic step (as it does for calls in different processes): a call
// whose reservation no longer fits, because another one took the money
// meanwhile, is decided again on the balance then. A call's estimate (and,
// with GuardOptions.MaxCalls, the call it counts) is held while the call is
// decided, before the decision is known: a call deferred for want of money
// or of a call (CALL_LIMIT_REACHED, BUDGET_EXCEEDED, REDUCE_SCOPE under
// SkipAdvised, OverBudget, or a reservation the store refused) while
// another decision of the same Guard held such a tentative reservation
// withdraws its own, waits until those decisions are settled (their calls
// run, or their holds are withdrawn) and is decided again, at most three
// times; so, as when the Guard decided one call at a time, a hold that is
// then withdrawn does not defer it, and a call that runs still does. A call
// is never allowed money, or a call, that another holds. Between Guards,
// in one process or several on a shared store, a call may still be
// deferred for another Guard's tentative hold that is then withdrawn.
// That is enough when the Guard owns the budget (GuardOptions.BudgetUSD),
// as far as estimates go: a call whose
// Completion.CostUSD exceeds its estimate takes spending past BudgetUSD by the
// difference (the calls after it see nothing left). When the caller supplies
// RemainingUSD itself, it must deduct a call's cost before the call's
// function returns, and must read RemainingUSD as late as possible:
// a request built from a balance read before another call finished still
// counts that call's money as free.
//
// # Started calls are spent
//
// The Guard reserves a call's estimate before it decides, in one step with
// the read of the balance and of the history of the call's fingerprint
// ([LedgerStore.ReserveOf]), and withdraws the reservation
// ([LedgerStore.Cancel]) when the decision is not to run: a call that
// runs costs two trips to a remote store, the reservation and the
// settlement.
//
// A call's reservation is started (Reservation.Started): on a store shared
// by processes, a worker that dies or stalls while its call runs leaves
// its estimate charged when the lease expires, never free for another
// call, since the tool may have reached its provider; the call's own
// settlement, if it comes, replaces the charge by the cost. A call whose
// function panics is settled at its estimate. Every store call has a
// deadline (GuardOptions.StoreTimeout, SettleTimeout) even when the
// caller's context has none, so a stalled store fails the call closed in
// bounded time.
type Guard struct {
	lost        atomic.Uint64 // losses of the store's state its calls were told of
	ledger      *Ledger
	store       LedgerStore // the money; may be the ledger's store
	lease       time.Duration
	timeout     time.Duration // StoreTimeout
	settleFor   time.Duration // SettleTimeout
	advise      AdvisePolicy
	unsupported UnsupportedPolicy
	catalog     atomic.Pointer[preflight.Catalog] // nil means the default; changed at the gate (lock.go), read before it too
	budget      atomic.Pointer[decimal.Dec]       // nil unless a budget was set; changed at the gate

	maxCalls int
	coalesce bool
	// inProcess is true when the money and the history are both in
	// in-process stores, which never wait on I/O: no store deadline is
	// set for them (see bound).
	inProcess bool

	// mu guards the fields below it, never across I/O; see lock.go.
	mu         sync.Mutex
	flights    map[string]*Flight // read-only calls in flight, by fingerprint
	turns      map[string]*turn   // the fingerprints deciding, or waiting to
	spareTurns []*turn
	// The gate: decisions under way, and SetCatalog, SetBudget or
	// RaiseBudget under way or waiting for them.
	deciding       int
	changing       bool
	changesWaiting int
	gateWake       chan struct{}
	// Tentative decisions (lock.go): how many, the tickets given out, the
	// decisions settled without keeping their reservation, and the
	// channel closed when one is settled (nil when nobody waits).
	tentative   int
	tickets     uint64
	withdrawals uint64
	settleWake  chan struct{}

	// seen is the balance the next Begin expects its decision to see
	// (the last one seen, with the calls settled since): Begin's first
	// decision is made on it, so that the second is not needed when the
	// balance is as expected. Only a guess: Begin decides again whenever
	// the balance it reads differs. nil before the first call.
	seen atomic.Pointer[Balance]
}

// CallFunc makes the real tool call. It should save the result where it can
// find it again and return that place as Completion.ResultReference.
type CallFunc func(ctx context.Context) (Completion, error)

// NewGuard returns a Guard recording into ledger. A nil ledger means a new
// one with the system clock (see [Guard.Ledger]). opts may be nil. It fails
// only when opts.BudgetUSD is not a non-negative decimal, or is one that
// opts.Store cannot keep as a limit (see [LedgerStore]: the Redis store
// counts at most 18 fraction digits), or when opts.Lease is one the store
// refuses (the Redis store's is at most its IdleTTL).
func NewGuard(ledger *Ledger, opts *GuardOptions) (*Guard, error) {
	var store LedgerStore
	if opts != nil {
		store = opts.Store
	}
	if ledger == nil {
		ledger = NewLedger(&LedgerOptions{Store: store})
	}
	if store == nil {
		store = NewMemoryLedgerStore(nil)
	}
	g := &Guard{ledger: ledger, store: store, coalesce: true, flights: make(map[string]*Flight), turns: make(map[string]*turn),
		timeout: defaultStoreTimeout, settleFor: defaultSettleTimeout}
	_, memMoney := store.(*memoryLedgerStore)
	_, memHistory := ledger.store.(*memoryLedgerStore)
	g.inProcess = memMoney && memHistory
	if opts != nil {
		g.lease = opts.Lease
		if opts.StoreTimeout > 0 {
			g.timeout = opts.StoreTimeout
		}
		if opts.SettleTimeout > 0 {
			g.settleFor = opts.SettleTimeout
		}
		if c, ok := store.(leaseChecker); ok && opts.Lease > 0 {
			if err := c.CheckLease(opts.Lease); err != nil {
				return nil, fmt.Errorf("agent: Lease %v cannot be used with the store: %w", opts.Lease, err)
			}
		}
		g.advise, g.unsupported = opts.Advise, opts.Unsupported
		g.catalog.Store(opts.Catalog)
		g.maxCalls, g.coalesce = opts.MaxCalls, !opts.NoCoalesce
		if opts.BudgetUSD != "" {
			b, err := g.checkBudget(opts.BudgetUSD)
			if err != nil {
				return nil, err
			}
			g.budget.Store(&b)
		}
	}
	return g, nil
}

// bound returns ctx with the deadline d for a call of the Guard's stores
// (GuardOptions.StoreTimeout, SettleTimeout), unless both are in-process
// stores, which never wait on I/O: then ctx as it is (a deadline per call
// would cost a timer and two allocations for nothing).
func (g *Guard) bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if g.inProcess {
		return ctx, noCancel
	}
	return context.WithTimeout(ctx, d)
}

func noCancel() {}

// checkBudget parses usd as a budget the Guard's store can keep.
func (g *Guard) checkBudget(usd json.Number) (decimal.Dec, error) {
	b, err := parseUSD(usd)
	if err != nil || b.Sign() < 0 || usd == "" {
		return decimal.Dec{}, fmt.Errorf("agent: BudgetUSD %q must be a non-negative decimal", string(usd))
	}
	if c, ok := g.store.(limitChecker); ok {
		if err := c.CheckLimit(formatUSD(b)); err != nil {
			return decimal.Dec{}, fmt.Errorf("agent: BudgetUSD %q cannot be kept by the store: %w", string(usd), err)
		}
	}
	return b, nil
}

// Ledger returns the ledger the Guard records into.
func (g *Guard) Ledger() *Ledger { return g.ledger }

// SpentUSD returns what the calls run through this Guard cost so far, as
// exact decimal text; with a store shared by processes, what all Guards on
// the store spent. The error is the store's, when it cannot be read.
func (g *Guard) SpentUSD(ctx context.Context) (json.Number, error) {
	ctx, cancel := g.bound(ctx, g.timeout)
	defer cancel()
	st, err := g.store.StateOf(ctx, "")
	if err != nil {
		return "", err
	}
	return st.Balance.SpentUSD, nil
}

// BudgetUSD returns GuardOptions.BudgetUSD as exact decimal text, or ""
// when the Guard does not own the budget (the caller supplies
// RemainingUSD).
func (g *Guard) BudgetUSD() json.Number {
	b := g.budget.Load()
	if b == nil {
		return ""
	}
	return formatUSD(*b)
}

// SetBudget replaces the Guard's budget (GuardOptions.BudgetUSD) while
// it runs, for example once a person allowed more spending: the calls
// decided from then on see usd minus what was spent as the money left. A
// Guard made without a budget owns one from then on. What was spent and
// what calls in flight hold are kept: a budget below the spending leaves
// nothing for new calls, and undoes no call; a call deferred for the
// budget before is decided again when it is proposed again. SetBudget
// waits for the decisions under way (new ones wait for it) and is safe
// for concurrent use; to add
// to the budget while others may change it, use [Guard.RaiseBudget].
// With a store shared by processes the budget is each Guard's own: set
// it on each. It fails, changing nothing, when usd is not a
// non-negative decimal or is one the store cannot keep as a limit.
func (g *Guard) SetBudget(usd json.Number) error {
	b, err := g.checkBudget(usd)
	if err != nil {
		return err
	}
	g.change(func() { g.budget.Store(&b) })
	return nil
}

// RaiseBudget adds usd, a non-negative decimal, to the Guard's budget in
// one step (two raises at once both count) and returns the new budget,
// as exact decimal text. It is SetBudget otherwise. It fails, changing
// nothing, when usd is malformed or negative, when the Guard has no
// budget of its own (see [Guard.BudgetUSD]: use SetBudget), or when the
// store cannot keep the sum.
func (g *Guard) RaiseBudget(usd json.Number) (json.Number, error) {
	by, err := parseUSD(usd)
	if err != nil || by.Sign() < 0 || usd == "" {
		return "", fmt.Errorf("agent: a budget raise %q must be a non-negative decimal", string(usd))
	}
	var raised json.Number
	g.change(func() {
		old := g.budget.Load()
		if old == nil {
			err = errors.New("agent: the Guard has no budget of its own (GuardOptions.BudgetUSD) to raise; set one with SetBudget")
			return
		}
		var b decimal.Dec
		if b, err = g.checkBudget(formatUSD(decimal.Add(*old, by))); err != nil {
			return
		}
		g.budget.Store(&b)
		raised = formatUSD(b)
	})
	return raised, err
}

// SetCatalog replaces the catalog later calls are decided with (nil means
// preflight.DefaultCatalog()), for example after the tool list changed. It
// waits for the decisions under way to finish (new ones wait for it); the
// ledger, the money and
// calls in flight are kept.
func (g *Guard) SetCatalog(c *preflight.Catalog) {
	g.change(func() { g.catalog.Store(c) })
}

// Catalog returns the catalog calls are decided with now (nil means
// preflight.DefaultCatalog()): what an auditor needs, with Report.Request,
// to decide a call again.
func (g *Guard) Catalog() *preflight.Catalog { return g.catalog.Load() }

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
//     RequestFingerprint, req.Task.GoalHash and the Completion's reference,
//     and call's error is returned unchanged (joined with a recording error
//     if the Completion is malformed, in which case nothing is recorded).
//
// When call does not run, nothing is recorded. A context that is already
// done when Call starts, that ends while Call waits for the decision and
// reservation of an identical call (on a slow store), for SetCatalog,
// SetBudget or RaiseBudget, or for other decisions' tentative reservations
// (see "Budget reservation"), or that is done when the
// call is about to run, stops it before running call: Call returns
// ctx.Err() and records nothing. A context
// cancelled while call runs is call's business: its Completion is recorded
// as it classified it. Call never retries.
func (g *Guard) Call(ctx context.Context, req preflight.ToolCallRequest, call CallFunc) (Report, error) {
	p, rep, err := g.Begin(ctx, req)
	if p == nil {
		return rep, err
	}
	return p.run(ctx, call)
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
