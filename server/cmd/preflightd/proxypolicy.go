package main

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/server/internal/auth"
	"github.com/agentpreflight/preflight/server/internal/sharedstate"
)

// Per-principal policy: the principals file's "policy" of a principal
// sets its runs' budget and call limit, the tools it sees and may call,
// prices and TTLs of its own, and a budget all its runs share over a
// window. The proxy applies it through mcpproxy's ScopeGuard and
// ToolAllowed hooks.

// principalPolicies applies the policies of a principals file.
type principalPolicies struct {
	file   *auth.File
	shared *sharedstate.Store // with --store: the window budgets are kept there, for every replica

	mu      sync.Mutex
	windows map[string]*windowBudget // by principal, for those with a budgetUsd
}

func newPrincipalPolicies(f *auth.File) *principalPolicies {
	return &principalPolicies{file: f, windows: map[string]*windowBudget{}}
}

// toolAllowed is mcpproxy.Options.ToolAllowed, nil when no policy names
// tools (then nothing is filtered).
func (pp *principalPolicies) toolAllowed() func(principal, tool string) bool {
	if pp.file == nil {
		return nil
	}
	for _, p := range pp.file.Principals {
		if p.Policy != nil && p.Policy.Tools != nil {
			return func(principal, tool string) bool { return pp.file.PolicyOf(principal).Allows(tool) }
		}
	}
	return nil
}

// scopeGuard is mcpproxy.Options.ScopeGuard: the guard options of a new
// run of principal.
func (pp *principalPolicies) scopeGuard(principal string, o mcpguard.Options) mcpguard.Options {
	pol := pp.file.PolicyOf(principal)
	if pol == nil {
		return o
	}
	if pol.BudgetUSDPerRun != "" {
		o.BudgetUSD = pol.BudgetUSDPerRun
	}
	if pol.MaxCallsPerRun > 0 {
		o.MaxCalls = pol.MaxCallsPerRun
	}
	if len(pol.Operations) > 0 {
		specs := append([]tools.Spec(nil), o.Specs...)
		for _, op := range pol.Operations {
			i := -1
			for j := range specs {
				if specs[j].Operation.Name == op.Name {
					i = j
				}
			}
			if i < 0 {
				specs = append(specs, tools.Spec{Operation: preflight.Operation{Name: op.Name}})
				i = len(specs) - 1
			}
			if op.PriceUSD != "" {
				specs[i].PriceUSD = op.PriceUSD
			}
			if op.TTLSeconds != "" {
				specs[i].TTLSeconds = op.TTLSeconds
			}
		}
		o.Specs = specs
	}
	if pol.BudgetUSD != "" {
		limit, _ := new(big.Rat).SetString(string(pol.BudgetUSD))
		pp.mu.Lock()
		w := pp.windows[principal]
		if w == nil {
			w = &windowBudget{limit: limit, window: pol.WindowDuration(), held: map[*sharedStore]map[string]*big.Rat{}}
			if pp.shared != nil {
				w.remote = pp.shared.Window(principal, w.window, pol.BudgetUSD)
			}
			pp.windows[principal] = w
		}
		pp.mu.Unlock()
		// Each run keeps its own ledger (history, its budget and call
		// limit; in the --store when there is one); its reservations are
		// held in the principal's window budget too, which all its runs
		// in this process share.
		base := o.LedgerStore
		if base == nil {
			base = agent.NewMemoryLedgerStore(nil)
		}
		o.LedgerStore = &sharedStore{store: base, w: w}
	}
	return o
}

// windowBudget is the money a principal's runs together may spend in a
// window: the window starts with the first reservation and starts again
// once it has passed (money held across the turn stays held). With a
// shared store (--store) the budget is kept there instead (remote), for
// the principal's runs on every replica, and the windows are the
// multiples of its length since the Unix epoch, which every replica
// agrees on.
type windowBudget struct {
	limit  *big.Rat
	window time.Duration
	remote *sharedstate.Window // nil without --store

	mu    sync.Mutex
	start time.Time
	spent *big.Rat
	held  map[*sharedStore]map[string]*big.Rat // by run store and reservation id
}

// roll starts a new window when the current one has passed. w.mu is held.
func (w *windowBudget) roll(now time.Time) {
	if w.spent == nil || now.Sub(w.start) >= w.window {
		w.start, w.spent = now, new(big.Rat)
	}
}

// reserve holds amount for (s, id) if it fits the window's budget.
func (w *windowBudget) reserve(s *sharedStore, id string, amount *big.Rat) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roll(time.Now())
	if _, ok := w.held[s][id]; ok {
		return true // a retried reservation: held already
	}
	total := new(big.Rat).Add(w.spent, amount)
	for _, ids := range w.held {
		for _, a := range ids {
			total.Add(total, a)
		}
	}
	if amount.Sign() > 0 && total.Cmp(w.limit) > 0 {
		return false
	}
	if w.held[s] == nil {
		w.held[s] = map[string]*big.Rat{}
	}
	w.held[s][id] = amount
	return true
}

// end frees the hold of (s, id) and counts cost as spent (nil: nothing).
func (w *windowBudget) end(s *sharedStore, id string, cost *big.Rat) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.held[s][id]; !ok {
		return // settled or released already
	}
	delete(w.held[s], id)
	if len(w.held[s]) == 0 {
		delete(w.held, s)
	}
	w.roll(time.Now())
	if cost != nil {
		w.spent.Add(w.spent, cost)
	}
}

// sharedStore is a run's ledger store whose reservations must also fit
// its principal's window budget. It names every method of
// agent.LedgerStore rather than embedding one, so that a method the
// contract gains cannot pass the window by unchecked.
type sharedStore struct {
	store agent.LedgerStore
	w     *windowBudget
}

var _ agent.LedgerStore = (*sharedStore)(nil)

func (s *sharedStore) Append(ctx context.Context, e agent.Entry) error {
	return s.store.Append(ctx, e)
}

func (s *sharedStore) State(ctx context.Context) (agent.LedgerState, error) {
	return s.store.State(ctx)
}

func (s *sharedStore) StateOf(ctx context.Context, fingerprint string) (agent.LedgerState, error) {
	return s.store.StateOf(ctx, fingerprint)
}

// amountOf reads a reservation's amount; text that is no number holds 0.
func amountOf(r agent.Reservation) *big.Rat {
	amount, ok := new(big.Rat).SetString(string(r.AmountUSD))
	if !ok {
		return new(big.Rat)
	}
	return amount
}

func (s *sharedStore) Reserve(ctx context.Context, r agent.Reservation) (bool, agent.Balance, error) {
	if s.w.remote != nil {
		if ok, err := s.w.remote.Reserve(ctx, r.ID, r.AmountUSD); err != nil || !ok {
			st, serr := s.store.State(ctx)
			return false, st.Balance, errors.Join(err, serr)
		}
		ok, b, err := s.store.Reserve(ctx, r)
		if err != nil || !ok {
			s.w.remote.Cancel(ctx, r.ID)
		}
		return ok, b, err
	}
	if !s.w.reserve(s, r.ID, amountOf(r)) {
		st, err := s.store.State(ctx)
		return false, st.Balance, err
	}
	ok, b, err := s.store.Reserve(ctx, r)
	if err != nil || !ok {
		s.w.end(s, r.ID, nil)
	}
	return ok, b, err
}

// ReserveOf is Reserve that also reads the fingerprint's history, as the
// Guard reserves before it decides.
func (s *sharedStore) ReserveOf(ctx context.Context, r agent.Reservation, fingerprint string) (bool, agent.LedgerState, error) {
	if s.w.remote != nil {
		if ok, err := s.w.remote.Reserve(ctx, r.ID, r.AmountUSD); err != nil || !ok {
			st, serr := s.store.StateOf(ctx, fingerprint)
			return false, st, errors.Join(err, serr)
		}
		ok, st, err := s.store.ReserveOf(ctx, r, fingerprint)
		if err != nil || !ok {
			s.w.remote.Cancel(ctx, r.ID)
		}
		return ok, st, err
	}
	if !s.w.reserve(s, r.ID, amountOf(r)) {
		st, err := s.store.StateOf(ctx, fingerprint)
		return false, st, err
	}
	ok, st, err := s.store.ReserveOf(ctx, r, fingerprint)
	if err != nil || !ok {
		s.w.end(s, r.ID, nil)
	}
	return ok, st, err
}

// Cancel withdraws a reservation the decision did not use: nothing spent.
func (s *sharedStore) Cancel(ctx context.Context, id string) error {
	if s.w.remote != nil {
		return errors.Join(s.w.remote.Cancel(ctx, id), s.store.Cancel(ctx, id))
	}
	s.w.end(s, id, nil)
	return s.store.Cancel(ctx, id)
}

func (s *sharedStore) Settle(ctx context.Context, id string, costUSD json.Number, record *agent.Entry) (agent.Settlement, error) {
	if s.w.remote != nil {
		werr := s.w.remote.Settle(ctx, id, costUSD)
		st, err := s.store.Settle(ctx, id, costUSD, record)
		return st, errors.Join(err, werr)
	}
	cost, ok := new(big.Rat).SetString(string(costUSD))
	if !ok {
		cost = nil
	}
	s.w.end(s, id, cost)
	return s.store.Settle(ctx, id, costUSD, record)
}

func (s *sharedStore) Release(ctx context.Context, id string) error {
	if s.w.remote != nil {
		return errors.Join(s.w.remote.Release(ctx, id), s.store.Release(ctx, id))
	}
	s.w.end(s, id, nil)
	return s.store.Release(ctx, id)
}
