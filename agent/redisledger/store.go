// Package redisledger keeps an agent.Ledger's history and an agent.Guard's
// budget in Redis, so that many worker processes spend one budget and
// reuse each other's results. See [New] and [NewResultStore].
//
// Build the client with ContextTimeoutEnabled set (redis.UniversalOptions,
// redis.Options or redis.ClusterOptions): without it go-redis ignores
// context deadlines and waits on a slow Redis for its ReadTimeout (3 s by
// default), so neither a call's deadline nor the lease renewer's is kept.
//
// # Overshoot
//
// A call runs only after Redis has atomically reserved its estimate
// against the budget, so the estimates of the calls that run never add up
// past it. Spending can still pass the budget in three ways, each bounded:
//
//   - A tool that reports a cost (agent.Completion.CostUSD) above its estimate
//     adds the difference. The overshoot is at most the sum of those
//     differences over the calls in flight when the last call was
//     reserved; estimate each call's worst case to avoid it.
//   - A hold lapses when no renewal has reached Redis for a whole lease:
//     its money is given back and another worker can spend it while the
//     call runs; the call's cost is counted anyway when it settles
//     (agent.Report.LateSettlement). The overshoot is at most the costs of
//     the calls whose holds lapsed. Renewals go every third of the lease
//     and are tried again 0.1 s after one fails or gets no answer within
//     that third (with ContextTimeoutEnabled), so an interruption between
//     a worker and Redis (Redis stalled, restarting or failing over, a
//     network partition, the worker paused) shorter than a third of the
//     lease never lapses a hold, and one that lasts the whole lease always
//     does: choose Options.Lease at least three times the longest
//     interruption to ride out.
//   - With Options.IdleTTL set, the scope's keys expire when nothing has
//     written to it for IdleTTL: then its spending, holds, call count and
//     history are gone, and spending restarts from zero. Renewals are
//     writes, so this happens while calls are in flight only when every
//     worker with a call in flight has been cut off from Redis (or Redis
//     stalled) for longer than IdleTTL and no other worker wrote
//     meanwhile; IdleTTL is at least the lease (New refuses a shorter
//     one), so those calls' holds had lapsed too (the second way). The
//     workers can then spend a whole budget again, and the calls in flight
//     settle into the emptied scope: on top of the second way, the
//     overshoot is at most what was spent before the keys expired (itself
//     at most the budget plus the other two overshoots), once per
//     expiry. An interruption too short to lapse a
//     hold never expires the keys; leave IdleTTL zero, or well above the
//     longest interruption, to rule this out.
//
// A cost whose settlement still fails after Options.SettleTimeout is not
// counted at all (see [Store.Settle]). And Redis replicates
// asynchronously: a failover can lose settlements the old primary had
// acknowledged but not yet sent to its replica (the replication lag's
// worth), and spending can then pass the budget by at most their costs.
package redisledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/redis/go-redis/v9"
)

// Options configures a [Store]. The zero value and nil both work.
type Options struct {
	// Prefix starts every key; it must not contain '{' or '}'. Empty means
	// "preflight".
	Prefix string
	// Lease is how long a reservation outlives a worker that stopped
	// renewing it (died, or lost Redis): then its money is given back.
	// A live worker renews its leases every Lease/3 until the call ends,
	// so a call may run longer than Lease. Make it at least three times
	// the longest interruption between a worker and Redis to ride out
	// (see Overshoot in the package doc). Zero means 15 s.
	Lease time.Duration
	// SettledRetention is how long the ids of settled reservations are
	// kept to make a repeated settlement count once. Zero means 24 h.
	SettledRetention time.Duration
	// IdleTTL, when positive, makes a scope's keys expire when it has not
	// been written to for that long (its budget starts again from zero).
	// Every reservation, settlement, release, appended entry and lease
	// renewal is a write: while a call is in flight its renewals keep the
	// scope alive. It must be at least Lease (New refuses a shorter one),
	// and a reservation's own lease must not exceed it (Reserve refuses
	// one that does): keys that could expire before a lease would make
	// the lease meaningless. Zero means the keys never expire.
	IdleTTL time.Duration
	// SettleTimeout is how long Settle keeps retrying while Redis is
	// unreachable (the call already ran: its cost must be counted). Zero
	// means 30 s.
	SettleTimeout time.Duration
}

// Store is an agent.LedgerStore on Redis for one scope: the history and
// money of one customer's run. It is safe for concurrent use; every
// process that works for the scope opens its own Store on it.
type Store struct {
	c       redis.UniversalClient
	keys    []string
	lease   time.Duration
	keep    time.Duration
	idle    time.Duration
	timeout time.Duration

	mu      sync.Mutex
	leases  map[string]time.Duration // reservations held by this process
	stop    chan struct{}
	renewer bool
}

var _ agent.LedgerStore = (*Store)(nil)

// ErrScope is wrapped by the error of New for an unusable scope.
var ErrScope = errors.New("redisledger: bad scope")

// New returns the store of scope on c, a single Redis, a Cluster or a
// failover client, built with ContextTimeoutEnabled (see the package
// doc). Its keys are Prefix + ":{" + scope + "}:" + name: the scope is the
// hash tag, so every key of a scope lives in one Cluster slot and every
// script runs on one node. Two scopes share no key; give each
// customer (and run, when runs have their own budget) its own scope. scope
// must be 1 to 200 bytes without '{' or '}'. opts may be nil; an
// Options.IdleTTL shorter than Options.Lease is refused.
//
// Call Close when done, to stop renewing leases.
func New(c redis.UniversalClient, scope string, opts *Options) (*Store, error) {
	if scope == "" || len(scope) > 200 || strings.ContainsAny(scope, "{}") {
		return nil, fmt.Errorf("%w: %q must be 1 to 200 bytes without '{' or '}'", ErrScope, scope)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Prefix == "" {
		o.Prefix = "preflight"
	}
	if strings.ContainsAny(o.Prefix, "{}") {
		return nil, fmt.Errorf("%w: prefix %q contains '{' or '}'", ErrScope, o.Prefix)
	}
	if o.Lease <= 0 {
		o.Lease = 15 * time.Second
	}
	if o.IdleTTL > 0 && o.IdleTTL < o.Lease {
		return nil, fmt.Errorf("redisledger: Options.IdleTTL (%v) is shorter than Options.Lease (%v): the scope's keys could expire while a lease still holds money; make IdleTTL at least Lease", o.IdleTTL, o.Lease)
	}
	if o.SettledRetention <= 0 {
		o.SettledRetention = 24 * time.Hour
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 30 * time.Second
	}
	base := o.Prefix + ":{" + scope + "}:"
	return &Store{
		c:       c,
		keys:    []string{base + "money", base + "holds", base + "leases", base + "settled", base + "history"},
		lease:   o.Lease,
		keep:    o.SettledRetention,
		idle:    o.IdleTTL,
		timeout: o.SettleTimeout,
		leases:  make(map[string]time.Duration),
		stop:    make(chan struct{}),
	}, nil
}

// Close stops renewing the leases of this process's reservations; those
// still held expire. It does not close the client.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	return nil
}

// Keys returns the Redis keys of the store's scope.
func (s *Store) Keys() []string { return append([]string(nil), s.keys...) }

// storedEntry is a history entry as the scripts keep it.
type storedEntry struct {
	ID   string `json:"id"`
	FP   string `json:"fp"`
	O    string `json:"o"`
	Ref  string `json:"ref"`
	Goal string `json:"goal"`
	At   string `json:"at,omitempty"` // ms since the epoch, Redis's clock
}

func encodeEntry(e agent.Entry) string {
	b, _ := json.Marshal(storedEntry{ID: e.ToolCallID, FP: e.Fingerprint, O: string(e.Outcome), Ref: e.ResultReference, Goal: e.GoalHash})
	return string(b)
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Append records e in the scope's history, stamped with Redis's clock.
func (s *Store) Append(ctx context.Context, e agent.Entry) error {
	err := appendScript.Run(ctx, s.c, s.keys, encodeEntry(e), preflight.MaxHistory, ms(s.idle)).Err()
	if err != nil {
		return fmt.Errorf("redisledger: append: %w", err)
	}
	return nil
}

// State returns the scope's history, Redis's clock and the balance.
func (s *Store) State(ctx context.Context) (agent.LedgerState, error) {
	v, err := stateScript.Run(ctx, s.c, s.keys).Slice()
	if err != nil {
		return agent.LedgerState{}, fmt.Errorf("redisledger: state: %w", err)
	}
	if len(v) < 4 {
		return agent.LedgerState{}, fmt.Errorf("redisledger: state: %d values from the script", len(v))
	}
	now, err := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
	if err != nil {
		return agent.LedgerState{}, fmt.Errorf("redisledger: state: clock %v", v[0])
	}
	bal, err := balance(v[1:4])
	if err != nil {
		return agent.LedgerState{}, err
	}
	st := agent.LedgerState{Now: time.UnixMilli(now), Balance: bal, History: make([]agent.StoredEntry, 0, len(v)-4)}
	for _, raw := range v[4:] {
		var e storedEntry
		str, _ := raw.(string)
		if err := json.Unmarshal([]byte(str), &e); err != nil {
			return agent.LedgerState{}, fmt.Errorf("redisledger: history entry %q: %w", str, err)
		}
		at, _ := strconv.ParseInt(e.At, 10, 64)
		st.History = append(st.History, agent.StoredEntry{At: time.UnixMilli(at), Entry: agent.Entry{
			ToolCallID: e.ID, Fingerprint: e.FP, Outcome: agentOutcome(e.O), ResultReference: e.Ref, GoalHash: e.Goal,
		}})
	}
	return st, nil
}

// balance reads {spent, held, calls} as the scripts return them.
func balance(v []any) (agent.Balance, error) {
	spent, err := fromAtto(fmt.Sprint(v[0]))
	if err != nil {
		return agent.Balance{}, err
	}
	held, err := fromAtto(fmt.Sprint(v[1]))
	if err != nil {
		return agent.Balance{}, err
	}
	calls, err := strconv.Atoi(fmt.Sprint(v[2]))
	if err != nil {
		return agent.Balance{}, fmt.Errorf("redisledger: call count %v in Redis", v[2])
	}
	return agent.Balance{SpentUSD: spent, ReservedUSD: held, Calls: calls}, nil
}

// Reserve holds r.AmountUSD and one call, atomically in Redis, if the
// scope's limits hold, with a lease this process renews until Settle or
// Release. An amount with more than MaxFractionDigits fraction digits is
// held rounded up to the next attodollar; a limit with more is refused
// with an error wrapping ErrPrecision (see [Store.CheckLimit]).
//
// When Reserve returns an error from Redis, the hold may have been made
// and only its reply lost (the caller's deadline passed first, with
// ContextTimeoutEnabled, or the connection broke): Reserve then tries
// once, for up to 1 s and whatever ctx, to release it, so that its money
// is given back at once rather than a lease later. The call it counted
// stays counted, as for any release.
func (s *Store) Reserve(ctx context.Context, r agent.Reservation) (bool, agent.Balance, error) {
	amount, err := toAtto(r.AmountUSD)
	if err != nil {
		return false, agent.Balance{}, err
	}
	limit := ""
	if r.LimitUSD != "" {
		if limit, err = exactAtto(r.LimitUSD); err != nil {
			return false, agent.Balance{}, err
		}
	}
	if r.ID == "" {
		return false, agent.Balance{}, errors.New("redisledger: reservation without an id")
	}
	lease := r.Lease
	if lease <= 0 {
		lease = s.lease
	}
	if err := s.CheckLease(lease); err != nil {
		return false, agent.Balance{}, err
	}
	// Registered before the script runs, so that the renewer covers the
	// hold from the moment it exists.
	s.hold(r.ID, lease)
	v, err := reserveScript.Run(ctx, s.c, s.keys, r.ID, amount, limit, r.MaxCalls, ms(lease), ms(s.idle)).Slice()
	if err != nil {
		s.unhold(r.ID)
		if !isScriptError(err) {
			s.releaseLost(ctx, r.ID)
		}
		return false, agent.Balance{}, fmt.Errorf("redisledger: reserve: %w", err)
	}
	bal, err := balance(v[1:4])
	ok := fmt.Sprint(v[0]) == "1"
	if !ok {
		s.unhold(r.ID)
	}
	return ok, bal, err
}

// lostReleaseTimeout bounds releaseLost.
const lostReleaseTimeout = time.Second

// releaseLost gives back reservation id after Reserve failed without an
// answer from the script: Redis may have made the hold and its reply been
// lost (the caller's deadline passed, the connection broke), and the
// caller will not run the call. It tries the release script once, outside
// the caller's context, which has often ended; for an id Redis does not
// hold it does nothing. If it fails too, the hold is given back when its
// lease runs out.
func (s *Store) releaseLost(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lostReleaseTimeout)
	defer cancel()
	_ = releaseScript.Run(ctx, s.c, s.keys, id, ms(s.idle)).Err()
}

// CheckLease returns an error when a reservation lease is longer than
// Options.IdleTTL: the scope's keys could then expire while the lease
// still holds money. Reserve refuses such a lease; agent.NewGuard calls
// CheckLease on GuardOptions.Lease, so that it is refused when the Guard
// is built, not reported on every call as an unavailable store.
func (s *Store) CheckLease(lease time.Duration) error {
	if s.idle > 0 && lease > s.idle {
		return fmt.Errorf("redisledger: reservation lease %v is longer than Options.IdleTTL (%v): the scope's keys could expire while the lease still holds money; make the lease (GuardOptions.Lease) at most IdleTTL", lease, s.idle)
	}
	return nil
}

// CheckLimit returns an error wrapping ErrPrecision when limitUSD, a
// budget, has more than MaxFractionDigits fraction digits, and an error
// when it is not a non-negative decimal: the limits Reserve refuses.
// agent.NewGuard calls it on GuardOptions.BudgetUSD, so that such a budget
// is refused when the Guard is built.
func (s *Store) CheckLimit(limitUSD json.Number) error {
	_, err := exactAtto(limitUSD)
	return err
}

// Settle ends reservation id, counting costUSD as spent and recording
// record (when non-nil) in one atomic step. A cost with more than
// MaxFractionDigits fraction digits is counted rounded up to the next
// attodollar. While Redis is unreachable Settle retries for
// Options.SettleTimeout, keeping the lease renewed; then it gives up and
// returns an error: the cost is not counted, and the hold, no longer
// renewed, is given back when its lease runs out. This process stops
// renewing the lease when Settle returns, whatever it returns.
func (s *Store) Settle(ctx context.Context, id string, costUSD json.Number, record *agent.Entry) (agent.Settlement, error) {
	defer s.unhold(id)
	cost, err := toAtto(costUSD)
	if err != nil {
		return agent.Settlement{}, err
	}
	entry := ""
	if record != nil {
		entry = encodeEntry(*record)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	var v []any
	err = retry(ctx, func() error {
		var err error
		v, err = settleScript.Run(ctx, s.c, s.keys, id, cost, ms(s.keep), entry, preflight.MaxHistory, ms(s.idle)).Slice()
		return err
	})
	if err != nil {
		return agent.Settlement{}, fmt.Errorf("redisledger: settle %s: %w", id, err)
	}
	bal, err := balance(v[1:4])
	state := fmt.Sprint(v[0])
	return agent.Settlement{Late: state == "1", Duplicate: state == "2", Balance: bal}, err
}

// Release frees reservation id without spending.
func (s *Store) Release(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	err := retry(ctx, func() error { return releaseScript.Run(ctx, s.c, s.keys, id, ms(s.idle)).Err() })
	s.unhold(id) // on failure the lease expires
	if err != nil {
		return fmt.Errorf("redisledger: release %s: %w", id, err)
	}
	return nil
}

// retry runs f until it succeeds, returns a script error (which a retry
// would repeat), or ctx ends.
func retry(ctx context.Context, f func() error) error {
	wait := 20 * time.Millisecond
	for {
		err := f()
		if err == nil || isScriptError(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// isScriptError reports whether err came from a script that ran and
// failed, as opposed to a connection or a node that was not there.
func isScriptError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(err.Error(), "redisledger:")
}

func agentOutcome(s string) preflight.Outcome { return preflight.Outcome(s) }

// StateOf returns the scope's state with the history entries of
// fingerprint only.
func (s *Store) StateOf(ctx context.Context, fingerprint string) (agent.LedgerState, error) {
	st, err := s.State(ctx)
	h := st.History[:0]
	for _, e := range st.History {
		if e.Fingerprint == fingerprint {
			h = append(h, e)
		}
	}
	st.History = h
	return st, err
}
