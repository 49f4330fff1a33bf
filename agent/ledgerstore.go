package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/internal/decimal"
)

// LedgerStore is where a [Ledger] keeps its history and a [Guard] its
// money: the history entries of one scope (one customer's run) and the
// reservations, settlements and call count against that scope's budget.
//
// The default, [NewMemoryLedgerStore], keeps everything in the process.
// A store shared by many processes (such as the Redis store in the module
// github.com/agentpreflight/preflight/agent/redisledger) lets a fleet of
// workers spend one budget and reuse each other's results. Every method
// must be atomic on its own: Reserve in particular checks the limits and
// holds the money in one step, so that two workers can never both take the
// last dollar. A store is bound to one scope when it is created and never
// reads or writes another's.
//
// Money crosses this interface as exact decimal text; a store must never
// round it through a binary float. A store that counts a fixed number of
// fraction digits rounds the amounts it holds and the costs it counts up,
// never down, so that spending is never under-counted. A limit it cannot
// represent exactly would make every Reserve fail: such a store has a
// method CheckLimit(limitUSD json.Number) error, which [NewGuard] calls on
// GuardOptions.BudgetUSD so that the budget is refused when the Guard is
// built. Likewise a store that refuses some reservation leases has a
// method CheckLease(lease time.Duration) error, which NewGuard calls on a
// non-zero GuardOptions.Lease. A store that renews the leases of the
// reservations its process holds has the methods RenewLease(id string,
// lease time.Duration) and StopLease(id string): [Guard.Resume] starts
// renewing a reservation another process made, [Permit.Forget] stops.
type LedgerStore interface {
	// Append records the outcome of a completed call in the history,
	// stamped with the store's clock, applying the retention rules of
	// [Ledger] (at most preflight.MaxHistory entries).
	Append(ctx context.Context, e Entry) error
	// State returns the history, oldest recorded first, the store's clock
	// now (to age the entries) and the balance.
	State(ctx context.Context) (LedgerState, error)
	// StateOf is State with only the history entries whose Fingerprint is
	// fingerprint, oldest recorded first: all that Decide reads of the
	// history for a call with that fingerprint. A store keeps them indexed,
	// so that its cost does not grow with the rest of the history. An
	// empty fingerprint matches no entry: the balance alone.
	StateOf(ctx context.Context, fingerprint string) (LedgerState, error)
	// Reserve holds r.AmountUSD and one call for r.ID if they fit, in one
	// atomic step: spent + reserved + amount ≤ r.LimitUSD (when set and
	// the amount is positive) and calls + 1 ≤ r.MaxCalls (when positive).
	// ok is false, and nothing is held, when they do not fit. The balance
	// is the one after the step.
	//
	// Reserve is idempotent: for an id the store already holds (a retry
	// whose first copy reached the store) it holds nothing more and
	// returns ok true. For an id already settled or released it returns
	// an error wrapping [ErrReservationEnded]. A refused reservation
	// leaves no trace: its retry is decided again on the balance then.
	Reserve(ctx context.Context, r Reservation) (ok bool, b Balance, err error)
	// ReserveOf is Reserve followed, in the same step, by what
	// StateOf(ctx, fingerprint) would read: the balance after the step,
	// the store's clock and the entries of fingerprint. A Guard reserves
	// a call's estimate this way before it decides, so that a call that
	// runs costs two trips to a remote store (ReserveOf and Settle), and
	// cancels the reservation when the decision is not to run.
	ReserveOf(ctx context.Context, r Reservation, fingerprint string) (ok bool, st LedgerState, err error)
	// Cancel withdraws reservation id, made before its caller decided and
	// not used: its hold is freed, its call no longer counts against
	// MaxCalls, and what a lapsed started hold was charged is given back.
	// Cancelling an id not held, or already ended, does nothing.
	Cancel(ctx context.Context, id string) error
	// Settle ends reservation id: its hold is freed and costUSD counted as
	// spent. When record is non-nil it is appended to the history in the
	// same step. Settling an id whose lease expired still counts costUSD
	// as spent, in place of what the expiry charged (Settlement.Late). A
	// repeated Settle of an id counts nothing and returns the first
	// settlement's outcome with Duplicate set. A store that counts fewer
	// fraction digits than costUSD has rounds it up, never down, and never
	// refuses it for that. Whatever Settle returns, the store stops
	// keeping the hold alive: a hold it could not free lapses when its
	// lease runs out (and, started, is charged).
	Settle(ctx context.Context, id string, costUSD json.Number, record *Entry) (Settlement, error)
	// Release frees reservation id without spending: the call did not
	// run. The call still counts against MaxCalls. Releasing a started
	// reservation whose lease expired gives back what the expiry charged.
	// Releasing an id not held, or already ended, does nothing.
	Release(ctx context.Context, id string) error
}

// ErrReservationEnded is wrapped by the error of [LedgerStore.Reserve]
// for an id that was already settled or released: a reservation id is
// used once.
var ErrReservationEnded = errors.New("agent: reservation already ended")

// ErrStoreStateLost is wrapped by the errors of a [LedgerStore] that found
// its own state lost or rolled back (a server restarted without its data,
// restored from an older snapshot, or a part of a scope evicted): the
// money it would report is no longer what was spent. It wraps
// [ErrStoreUnavailable], so a Guard fails closed on it, and a store keeps
// returning it for the scope until an operator resets the scope: it never
// starts a fresh budget on its own.
var ErrStoreStateLost = fmt.Errorf("%w: state lost", ErrStoreUnavailable)

// limitChecker is the method of a [LedgerStore] that cannot represent
// every limit (see the LedgerStore doc).
type limitChecker interface {
	CheckLimit(limitUSD json.Number) error
}

// leaseChecker is the method of a [LedgerStore] that refuses some
// reservation leases (see the LedgerStore doc).
type leaseChecker interface {
	CheckLease(lease time.Duration) error
}

// leaseRenewer is the methods of a [LedgerStore] that renews the leases
// of the reservations its process holds (see the LedgerStore doc).
type leaseRenewer interface {
	RenewLease(id string, lease time.Duration)
	StopLease(id string)
}

// LedgerState is a snapshot of a [LedgerStore].
type LedgerState struct {
	// History is the recorded outcomes, oldest first.
	History []StoredEntry
	// Now is the store's clock when the snapshot was taken.
	Now time.Time
	// Balance is the scope's money and calls.
	Balance Balance
}

// StoredEntry is a history entry with its completion time.
type StoredEntry struct {
	Entry
	At time.Time
}

// Balance is what a scope has spent and holds, as exact decimal text.
type Balance struct {
	// SpentUSD is the total of settled costs.
	SpentUSD json.Number `json:"spentUSD"`
	// ReservedUSD is the total held by reservations still in flight.
	ReservedUSD json.Number `json:"reservedUSD"`
	// Calls is the number of reservations ever made (in flight, settled,
	// released or expired).
	Calls int `json:"calls"`
}

// Reservation asks a [LedgerStore] to hold money and one call.
type Reservation struct {
	// ID names the reservation; unique per call.
	ID string
	// AmountUSD is the money held until Settle or Release.
	AmountUSD json.Number
	// LimitUSD, when non-empty, is the budget the reservation must fit.
	LimitUSD json.Number
	// MaxCalls, when positive, is the call limit the reservation must fit.
	MaxCalls int
	// Lease is how long the hold lasts if its holder disappears; zero
	// means the store's default. When it expires a store shared by
	// processes gives the money back, or, when the reservation Started,
	// charges it (an in-process store has no use for leases: its holder
	// cannot outlive it).
	Lease time.Duration
	// Started says the call starts as soon as the reservation is held, as
	// with every reservation of a [Guard]: the tool may reach its provider
	// even if the holder dies. When the lease of a started reservation
	// expires, its AmountUSD is counted as spent (charged), never given
	// back for another call to spend; a later Settle replaces the charge
	// by the cost, a later Release gives it back. A reservation not
	// started is given back when its lease expires.
	Started bool
}

// Settlement is what [LedgerStore.Settle] did.
type Settlement struct {
	// Late is true when the reservation's lease had expired before the
	// settlement: its money had been given back (or, started, charged),
	// and the cost was counted as spent in its place. A duplicate reports
	// the first settlement's Late.
	Late bool
	// Duplicate is true when the reservation had already been settled;
	// nothing was counted again, and CostUSD is the first settlement's.
	Duplicate bool
	// CostUSD is the cost counted for the reservation, as the store counts
	// it (rounded up to its precision).
	CostUSD json.Number
	// Balance is the scope's balance after the settlement.
	Balance Balance
}

// memoryLedgerStore is the in-process LedgerStore: the behaviour a Ledger
// and a Guard had before stores existed.
type memoryLedgerStore struct {
	now func() time.Time

	mu      sync.Mutex
	history historyIndex
	spent   decimal.Dec
	held    decimal.Dec
	calls   int
	holds   map[string]decimal.Dec
	ended   map[string]ended // the last maxEndedIDs settled or released ids
	order   []string         // ended ids, oldest first
}

// ended is how a reservation ended, kept to answer its retries.
type ended struct {
	settled bool // false: released
	late    bool
	cost    decimal.Dec
}

// maxEndedIDs bounds the ended ids the in-memory store remembers to answer
// a repeated Settle or Reserve; the Guard itself never repeats one.
const maxEndedIDs = 4096

// NewMemoryLedgerStore returns the default [LedgerStore]: history and money
// in this process, lost with it. now is its clock; nil means time.Now.
func NewMemoryLedgerStore(now func() time.Time) LedgerStore {
	if now == nil {
		now = time.Now
	}
	return &memoryLedgerStore{now: now, history: newHistoryIndex(), holds: make(map[string]decimal.Dec), ended: make(map[string]ended)}
}

func (m *memoryLedgerStore) Append(_ context.Context, e Entry) error {
	at := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.history.record(e, at)
	return nil
}

func (m *memoryLedgerStore) State(context.Context) (LedgerState, error) {
	return m.state(nil), nil
}

func (m *memoryLedgerStore) StateOf(_ context.Context, fingerprint string) (LedgerState, error) {
	return m.state(&fingerprint), nil
}

// state returns the state with the entries of fingerprint fp, or all of
// them when fp is nil.
func (m *memoryLedgerStore) state(fp *string) LedgerState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stateLocked(fp)
}

// stateLocked is state; the caller holds m.mu.
func (m *memoryLedgerStore) stateLocked(fp *string) LedgerState {
	return LedgerState{History: m.history.entries(fp), Now: m.now(), Balance: m.balance()}
}

// balance returns the balance. The caller holds m.mu.
func (m *memoryLedgerStore) balance() Balance {
	return Balance{SpentUSD: formatUSD(m.spent), ReservedUSD: formatUSD(m.held), Calls: m.calls}
}

func (m *memoryLedgerStore) Reserve(_ context.Context, r Reservation) (bool, Balance, error) {
	var b Balance
	ok, err := m.reserveLocked(r, func() { b = m.balance() })
	return ok, b, err
}

func (m *memoryLedgerStore) ReserveOf(_ context.Context, r Reservation, fingerprint string) (bool, LedgerState, error) {
	var st LedgerState
	ok, err := m.reserveLocked(r, func() { st = m.stateLocked(&fingerprint) })
	return ok, st, err
}

func (m *memoryLedgerStore) Cancel(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if amount, ok := m.holds[id]; ok {
		m.held = decimal.Sub(m.held, amount)
		m.calls--
		delete(m.holds, id)
		m.end(id, ended{})
	}
	return nil
}

// reserveLocked does the work of Reserve and calls read, under m.mu,
// after the step (also when it refuses, not when it fails).
func (m *memoryLedgerStore) reserveLocked(r Reservation, read func()) (bool, error) {
	amount, err := parseUSD(r.AmountUSD)
	if err != nil || amount.Sign() < 0 {
		return false, fmt.Errorf("agent: reservation amount %q must be a non-negative decimal", string(r.AmountUSD))
	}
	var limit *decimal.Dec
	if r.LimitUSD != "" {
		l, err := parseUSD(r.LimitUSD)
		if err != nil {
			return false, fmt.Errorf("agent: reservation limit %q must be a decimal", string(r.LimitUSD))
		}
		limit = &l
	}
	if r.ID == "" {
		return false, errors.New("agent: reservation without an id")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, held := m.holds[r.ID]; held {
		read()
		return true, nil
	}
	if _, done := m.ended[r.ID]; done {
		return false, fmt.Errorf("%w: %q", ErrReservationEnded, r.ID)
	}
	if amount.Sign() > 0 && limit != nil && decimal.Cmp(decimal.Add(decimal.Add(m.spent, m.held), amount), *limit) > 0 ||
		r.MaxCalls > 0 && m.calls+1 > r.MaxCalls {
		read()
		return false, nil
	}
	m.held = decimal.Add(m.held, amount)
	m.calls++
	m.holds[r.ID] = amount
	read()
	return true, nil
}

func (m *memoryLedgerStore) Settle(_ context.Context, id string, costUSD json.Number, record *Entry) (Settlement, error) {
	cost, err := parseUSD(costUSD)
	if err != nil || cost.Sign() < 0 {
		return Settlement{}, fmt.Errorf("agent: settlement cost %q must be a non-negative decimal", string(costUSD))
	}
	at := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, done := m.ended[id]; done && e.settled {
		return Settlement{Duplicate: true, Late: e.late, CostUSD: formatUSD(e.cost), Balance: m.balance()}, nil
	}
	amount, held := m.holds[id]
	if held {
		m.held = decimal.Sub(m.held, amount)
		delete(m.holds, id)
	}
	m.spent = decimal.Add(m.spent, cost)
	m.end(id, ended{settled: true, late: !held, cost: cost})
	if record != nil {
		m.history.record(*record, at)
	}
	return Settlement{Late: !held, CostUSD: formatUSD(cost), Balance: m.balance()}, nil
}

func (m *memoryLedgerStore) Release(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if amount, ok := m.holds[id]; ok {
		m.held = decimal.Sub(m.held, amount)
		delete(m.holds, id)
		m.end(id, ended{})
	}
	return nil
}

// end remembers how reservation id ended. The caller holds m.mu.
func (m *memoryLedgerStore) end(id string, e ended) {
	if _, seen := m.ended[id]; !seen {
		m.order = append(m.order, id)
	}
	m.ended[id] = e
	if len(m.order) > maxEndedIDs {
		delete(m.ended, m.order[0])
		m.order = m.order[1:]
	}
}

// redundant reports whether recording newer makes older useless to
// Decide, under the retention rules of [Ledger]. Other stores mirror it.
func redundant(older, newer Entry) bool {
	if older.Fingerprint != newer.Fingerprint || older.Outcome != newer.Outcome {
		return false
	}
	switch newer.Outcome {
	case preflight.OutcomeSuccess:
		return older.GoalHash == newer.GoalHash && (newer.ResultReference != "" || older.ResultReference == "")
	case preflight.OutcomeTransientFailure:
		return true
	}
	return false
}

// evictionRank orders entries from the first to be evicted (0) to the
// last (3).
func evictionRank(e Entry) int {
	switch {
	case e.Outcome == preflight.OutcomeTransientFailure:
		return 0
	case e.Outcome == preflight.OutcomeSuccess && e.ResultReference == "":
		return 1
	case e.Outcome == preflight.OutcomeSuccess:
		return 2
	default:
		return 3
	}
}
