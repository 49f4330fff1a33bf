// Package pgledger keeps an agent.Ledger's history and an agent.Guard's
// budget in PostgreSQL, for fleets whose money must survive a crash of
// the database server itself: every reservation and settlement is a
// committed transaction before the Guard goes on. See [New].
//
// # Guarantees
//
// Every operation is one call of a PL/pgSQL function (one round trip,
// one transaction) that locks the scope's row: reservations check the
// limits and hold the money in one step, so the estimates of the calls
// that run never add up past the budget. A settlement that returned
// without an error is committed; with fsync and synchronous_commit on
// (New refuses a server with either off, unless Options.AllowUnsafeServer)
// it survives a crash of the server or its machine. A reservation or
// settlement whose transaction did not commit (the server was killed
// mid-call, the connection broke) returns an error: the Guard fails
// closed, and a settlement is retried within Options.SettleTimeout; both
// are idempotent, so a retry whose first copy committed counts nothing
// twice.
//
// Spending can pass the budget only by what a tool reports above its
// estimate (agent.Completion.CostUSD), as with every store. A worker that
// dies or stalls while its call runs leaves its started hold charged at
// the estimate when its lease expires, never free for another call; it
// is therefore counted at the estimate, or at its cost if it settles
// later. A settlement that still fails after SettleTimeout is not counted:
// the hold's lease then charges the estimate instead; so does a failed
// Cancel of a reservation the Guard made before deciding not to run.
//
// # Schema
//
// New creates, if missing, four tables (preflight_scopes, preflight_holds,
// preflight_ended, preflight_entries) and the functions preflight_* in the
// connection's search path, under an advisory lock; a role that may not
// create them needs them created once by one that may (run New once as
// the owner). Scopes never expire by themselves: [PruneIdle] deletes those
// idle for longer than a given time.
package pgledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/leases"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configures a [Store]. The zero value and nil both work.
type Options struct {
	// Lease is how long a reservation outlives a worker that stopped
	// renewing it: then a started reservation is charged, one not started
	// given back. A live worker renews its leases every Lease/3. Zero
	// means 15 s.
	Lease time.Duration
	// SettledRetention is how long the ids of ended reservations are kept
	// to answer a repeated Settle or Reserve. Zero means 24 h.
	SettledRetention time.Duration
	// Timeout bounds each call when the caller's context has no earlier
	// deadline. Zero means 5 s.
	Timeout time.Duration
	// SettleTimeout is how long Settle keeps retrying while the server is
	// unreachable, within the caller's deadline. Zero means 30 s.
	SettleTimeout time.Duration
	// AllowUnsafeServer makes New accept a server with fsync or
	// synchronous_commit off, which can lose committed settlements in a
	// crash.
	AllowUnsafeServer bool
}

// Store is an agent.LedgerStore on PostgreSQL for one scope. It is safe
// for concurrent use; every process that works for the scope opens its
// own Store on it.
type Store struct {
	db      *pgxpool.Pool
	scope   string
	lease   time.Duration
	keep    time.Duration
	timeout time.Duration
	settle  time.Duration

	keeper *leases.Keeper
}

var _ agent.LedgerStore = (*Store)(nil)

// ErrUnsafeServer is wrapped by the error of New for a server whose
// configuration can lose committed transactions in a crash.
var ErrUnsafeServer = errors.New("pgledger: the server can lose committed settlements")

// schemaOnce is the schema creation of this process, per pool.
var schemaOnce sync.Map // *pgxpool.Pool -> *schemaResult

type schemaResult struct {
	once sync.Once
	err  error
}

// New returns the store of scope (1 to 200 bytes) on db, creating the
// schema when missing (see the package doc). opts may be nil. Unless
// Options.AllowUnsafeServer, it refuses, with an error wrapping
// ErrUnsafeServer, a server with fsync or synchronous_commit off.
//
// Call Close when done, to stop renewing leases; it does not close db.
func New(ctx context.Context, db *pgxpool.Pool, scope string, opts *Options) (*Store, error) {
	if scope == "" || len(scope) > 200 {
		return nil, fmt.Errorf("pgledger: scope %q must be 1 to 200 bytes", scope)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Lease <= 0 {
		o.Lease = 15 * time.Second
	}
	if o.SettledRetention <= 0 {
		o.SettledRetention = 24 * time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, max(o.Timeout, 30*time.Second))
	defer cancel()
	if !o.AllowUnsafeServer {
		for _, name := range []string{"fsync", "synchronous_commit"} {
			var v string
			if err := db.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
				return nil, fmt.Errorf("pgledger: reading %s: %w", name, err)
			}
			if v == "off" {
				return nil, fmt.Errorf("%w: %s is off", ErrUnsafeServer, name)
			}
		}
	}
	r, _ := schemaOnce.LoadOrStore(db, &schemaResult{})
	sr := r.(*schemaResult)
	sr.once.Do(func() { sr.err = createSchema(ctx, db) })
	if sr.err != nil {
		schemaOnce.Delete(db)
		return nil, fmt.Errorf("pgledger: creating the schema: %w", sr.err)
	}
	s := &Store{db: db, scope: scope, lease: o.Lease, keep: o.SettledRetention, timeout: o.Timeout, settle: o.SettleTimeout}
	s.keeper = s.newKeeper()
	return s, nil
}

func createSchema(ctx context.Context, db *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7212345678901234)"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
}

// RenewLease renews the lease of reservation id, which another process
// made (see agent.Guard.Resume), from this process until Settle, Release
// or Cancel of id here, or StopLease; lease 0 means Options.Lease. A
// reservation no longer held is not renewed.
func (s *Store) RenewLease(id string, lease time.Duration) {
	if lease <= 0 {
		lease = s.lease
	}
	s.keeper.Hold(id, lease)
}

// StopLease stops renewing the lease of reservation id in this process
// (another process renews it now, see agent.Permit.Forget); the
// reservation stays held.
func (s *Store) StopLease(id string) { s.keeper.Drop(id) }

// Close stops renewing the leases of this process's reservations; those
// still held expire. It does not close the pool.
func (s *Store) Close() error {
	s.keeper.Close()
	return nil
}

// bounded gives ctx the store's Timeout when it has no earlier deadline.
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= s.timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.timeout)
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// amount checks that n is a non-negative decimal and returns it as text
// for numeric ("" is zero). Money never passes through a float.
func amount(n json.Number, what string) (string, error) {
	if n == "" {
		return "0", nil
	}
	if len(n) > 500 || strings.ContainsAny(string(n), "eE") {
		return "", fmt.Errorf("pgledger: %s %q must be a plain decimal", what, string(n))
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || r.Sign() < 0 {
		return "", fmt.Errorf("pgledger: %s %q must be a non-negative decimal", what, string(n))
	}
	return string(n), nil
}

// usd writes a numeric's text without trailing fraction zeros.
func usd(s string) json.Number {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "" {
		s = "0"
	}
	return json.Number(s)
}

func balance(spent, held string, calls int64) agent.Balance {
	return agent.Balance{SpentUSD: usd(spent), ReservedUSD: usd(held), Calls: int(calls)}
}

// Append records e in the scope's history, stamped with the server's
// clock.
func (s *Store) Append(ctx context.Context, e agent.Entry) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	_, err := s.db.Exec(ctx, "SELECT preflight_append($1, $2, $3, $4, $5, $6, $7, $8)",
		s.scope, e.ToolCallID, e.Fingerprint, string(e.Outcome), e.ResultReference, e.GoalHash, preflight.MaxHistory, ms(s.keep))
	if err != nil {
		return fmt.Errorf("pgledger: append: %w", err)
	}
	return nil
}

// State returns the scope's history, the server's clock and the balance.
func (s *Store) State(ctx context.Context) (agent.LedgerState, error) {
	return s.state(ctx, "", true)
}

// StateOf returns the scope's balance, the server's clock and the history
// entries of fingerprint, read through an index on it.
func (s *Store) StateOf(ctx context.Context, fingerprint string) (agent.LedgerState, error) {
	return s.state(ctx, fingerprint, false)
}

func (s *Store) state(ctx context.Context, fp string, all bool) (agent.LedgerState, error) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	rows, err := s.db.Query(ctx, "SELECT spent::text, held::text, calls, now_ms, call_id, fp, outcome, ref, goal, at_ms FROM preflight_state($1, $2, $3, $4)", s.scope, fp, all, ms(s.keep))
	if err != nil {
		return agent.LedgerState{}, fmt.Errorf("pgledger: state: %w", err)
	}
	defer rows.Close()
	var st agent.LedgerState
	first := true
	for rows.Next() {
		var spent, held, id, efp, outcome, ref, goal *string
		var calls, now, at *int64
		if err := rows.Scan(&spent, &held, &calls, &now, &id, &efp, &outcome, &ref, &goal, &at); err != nil {
			return agent.LedgerState{}, fmt.Errorf("pgledger: state: %w", err)
		}
		if first {
			if spent == nil || held == nil || calls == nil || now == nil {
				return agent.LedgerState{}, errors.New("pgledger: state: no balance")
			}
			st.Balance, st.Now, first = balance(*spent, *held, *calls), time.UnixMilli(*now), false
			continue
		}
		st.History = append(st.History, agent.StoredEntry{At: time.UnixMilli(*at), Entry: agent.Entry{
			ToolCallID: *id, Fingerprint: *efp, Outcome: preflight.Outcome(*outcome), ResultReference: *ref, GoalHash: *goal,
		}})
	}
	if err := rows.Err(); err != nil {
		return agent.LedgerState{}, fmt.Errorf("pgledger: state: %w", err)
	}
	if first {
		return agent.LedgerState{}, errors.New("pgledger: state: no balance")
	}
	return st, nil
}

// Reserve holds r.AmountUSD and one call if the scope's limits hold, in
// one transaction, with a lease this process renews until Settle or
// Release. A retry of a reservation the store holds holds nothing more
// and returns true. When Reserve fails without an answer (the connection
// broke, the deadline passed), the hold may have been committed: Reserve
// releases it in the background.
func (s *Store) Reserve(ctx context.Context, r agent.Reservation) (bool, agent.Balance, error) {
	ok, st, err := s.reserve(ctx, r, "")
	return ok, st.Balance, err
}

// ReserveOf is Reserve, reading in the same statement the balance, the
// server's clock and the history entries of fingerprint: one round trip.
func (s *Store) ReserveOf(ctx context.Context, r agent.Reservation, fingerprint string) (bool, agent.LedgerState, error) {
	return s.reserve(ctx, r, fingerprint)
}

const reserveSQL = `SELECT r.ok, r.spent::text, r.held::text, r.calls, (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
	e.call_id, e.fp, e.outcome, e.ref, e.goal, (extract(epoch FROM e.at) * 1000)::bigint
FROM preflight_reserve($1, $2, $3::numeric, $4::numeric, $5, $6, $7, $8) r
LEFT JOIN LATERAL (SELECT * FROM preflight_entries WHERE scope = $1 AND fp = $9) e ON true
ORDER BY e.seq`

func (s *Store) reserve(ctx context.Context, r agent.Reservation, fp string) (bool, agent.LedgerState, error) {
	var st agent.LedgerState
	amt, err := amount(r.AmountUSD, "reservation amount")
	if err != nil {
		return false, st, err
	}
	var limit *string
	if r.LimitUSD != "" {
		l, err := amount(r.LimitUSD, "reservation limit")
		if err != nil {
			return false, st, err
		}
		limit = &l
	}
	if r.ID == "" {
		return false, st, errors.New("pgledger: reservation without an id")
	}
	lease := r.Lease
	if lease <= 0 {
		lease = s.lease
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	s.keeper.Hold(r.ID, lease)
	ok, err := s.reserveQuery(ctx, &st, r, amt, limit, lease, fp)
	if err != nil {
		s.keeper.Drop(r.ID)
		if !isServerError(err) {
			go s.releaseLost(r.ID)
		}
		return false, agent.LedgerState{}, fmt.Errorf("pgledger: reserve: %w", err)
	}
	if ok != 1 {
		s.keeper.Drop(r.ID)
	}
	if ok < 0 {
		return false, st, fmt.Errorf("%w: %q", agent.ErrReservationEnded, r.ID)
	}
	return ok == 1, st, nil
}

func (s *Store) reserveQuery(ctx context.Context, st *agent.LedgerState, r agent.Reservation, amt string, limit *string, lease time.Duration, fp string) (int, error) {
	rows, err := s.db.Query(ctx, reserveSQL, s.scope, r.ID, amt, limit, r.MaxCalls, ms(lease), r.Started, ms(s.keep), fp)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	ok, first := 0, true
	for rows.Next() {
		var spent, held string
		var calls, now int64
		var id, efp, outcome, ref, goal *string
		var at *int64
		if err := rows.Scan(&ok, &spent, &held, &calls, &now, &id, &efp, &outcome, &ref, &goal, &at); err != nil {
			return 0, err
		}
		if first {
			st.Balance, st.Now, first = balance(spent, held, calls), time.UnixMilli(now), false
		}
		if id != nil {
			st.History = append(st.History, agent.StoredEntry{At: time.UnixMilli(*at), Entry: agent.Entry{
				ToolCallID: *id, Fingerprint: *efp, Outcome: preflight.Outcome(*outcome), ResultReference: *ref, GoalHash: *goal,
			}})
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if first {
		return 0, errors.New("no reply")
	}
	return ok, nil
}

// Cancel withdraws reservation id: its hold is freed and its call no
// longer counts.
func (s *Store) Cancel(ctx context.Context, id string) error {
	defer s.keeper.Drop(id)
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	err := retry(ctx, func() error {
		_, err := s.db.Exec(ctx, "SELECT preflight_cancel($1, $2, $3)", s.scope, id, ms(s.keep))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgledger: cancel %s: %w", id, err)
	}
	return nil
}

// releaseLost gives back reservation id after Reserve failed without an
// answer.
func (s *Store) releaseLost(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = s.db.Exec(ctx, "SELECT preflight_release($1, $2, $3)", s.scope, id, ms(s.keep))
}

// Settle ends reservation id, counting costUSD as spent and recording
// record (when non-nil) in one transaction. It retries while the server
// is unreachable (within ctx and Options.SettleTimeout); a copy that had
// committed is answered with the first outcome, not as a Duplicate. This
// process stops renewing the lease when Settle returns.
func (s *Store) Settle(ctx context.Context, id string, costUSD json.Number, record *agent.Entry) (agent.Settlement, error) {
	defer s.keeper.Drop(id)
	cost, err := amount(costUSD, "settlement cost")
	if err != nil {
		return agent.Settlement{}, err
	}
	var e agent.Entry
	if record != nil {
		e = *record
	}
	nonce := newNonce()
	ctx, cancel := context.WithTimeout(ctx, s.settle)
	defer cancel()
	var state int
	var late bool
	var counted, spent, held string
	var calls int64
	err = retry(ctx, func() error {
		actx, acancel := s.bounded(ctx)
		defer acancel()
		return s.db.QueryRow(actx, "SELECT state, late, counted::text, spent::text, held::text, calls FROM preflight_settle($1, $2, $3::numeric, $4, $5, $6, $7, $8, $9, $10, $11)",
			s.scope, id, cost, nonce, ms(s.keep), e.ToolCallID, e.Fingerprint, string(e.Outcome), e.ResultReference, e.GoalHash, preflight.MaxHistory).
			Scan(&state, &late, &counted, &spent, &held, &calls)
	})
	if err != nil {
		return agent.Settlement{}, fmt.Errorf("pgledger: settle %s: %w", id, err)
	}
	return agent.Settlement{Late: late, Duplicate: state == 2, CostUSD: usd(counted), Balance: balance(spent, held, calls)}, nil
}

// Release frees reservation id without spending.
func (s *Store) Release(ctx context.Context, id string) error {
	defer s.keeper.Drop(id)
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	err := retry(ctx, func() error {
		_, err := s.db.Exec(ctx, "SELECT preflight_release($1, $2, $3)", s.scope, id, ms(s.keep))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgledger: release %s: %w", id, err)
	}
	return nil
}

// retry runs f until it succeeds, fails with an error from the server
// (which a retry would repeat), or ctx ends.
func retry(ctx context.Context, f func() error) error {
	wait := 20 * time.Millisecond
	for {
		err := f()
		if err == nil || isServerError(err) {
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

// isServerError reports whether err is an error the server returned for
// the statement (a retry would repeat it), rather than a lost connection.
// A server shutting down or in recovery is not such an error.
func isServerError(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code[:2] {
	case "08", "57", "53", "40": // connection, operator intervention, resources, rollback
		return false
	}
	return true
}
