package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/internal/decimal"
)

// ErrStoreUnavailable is wrapped by the errors of [Guard.Begin] and
// [Guard.Call] when the Guard's [LedgerStore] could not be read or could
// not reserve: the call was not made (a Guard fails closed).
var ErrStoreUnavailable = errors.New("ledger store unavailable")

// maxReserveAttempts is how often Begin decides again after a store shared
// with other processes refused a reservation the decision allowed.
const maxReserveAttempts = 3

// fill puts the history and, as configured, the money and calls left into
// req.
func (g *Guard) fill(req *preflight.ToolCallRequest, st LedgerState) {
	req.History = historyOf(st)
	spent, _ := parseUSD(st.Balance.SpentUSD)
	held, _ := parseUSD(st.Balance.ReservedUSD)
	if b := g.budget.Load(); b != nil {
		left := decimal.Sub(*b, spent)
		if left.Sign() < 0 {
			left = decimal.Dec{}
		}
		req.Budget.RemainingUSD = formatUSD(left)
	}
	if held.Sign() > 0 {
		// A malformed ReservedUSD is left alone for Decide to report.
		if r, err := parseUSD(req.Budget.ReservedUSD); err == nil {
			req.Budget.ReservedUSD = formatUSD(decimal.Add(r, held))
		}
	}
	if g.maxCalls > 0 {
		left := g.maxCalls - st.Balance.Calls
		if left < 0 {
			left = 0
		}
		req.Budget.MaxToolCallsRemaining = json.Number(strconv.Itoa(left))
	}
}

// reserveOf holds estimate and one call for req in the Guard's store, as
// a started reservation, and reads in the same step the balance and the
// history of fingerprint fp (from the ledger's store when it is another).
// ok is false when the store refused: the limits do not hold. The
// returned state is the one the decision must see: without this call's
// own hold.
func (g *Guard) reserveOf(ctx context.Context, fp string, estimate decimal.Dec) (id string, ok bool, st LedgerState, err error) {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id = hex.EncodeToString(raw[:])
	r := Reservation{ID: id, AmountUSD: formatUSD(estimate), MaxCalls: g.maxCalls, Lease: g.lease, Started: true}
	if b := g.budget.Load(); b != nil {
		r.LimitUSD = formatUSD(*b)
	}
	ctx, cancel := g.bound(ctx, g.timeout)
	defer cancel()
	ok, st, err = g.store.ReserveOf(ctx, r, fp)
	if err == nil && g.ledger.store != g.store {
		var h LedgerState
		if h, err = g.ledger.store.StateOf(ctx, fp); err != nil && ok {
			g.cancel(id)
		}
		st.History, st.Now = h.History, h.Now
	}
	if err != nil {
		g.noteLost(err)
		return "", false, LedgerState{}, fmt.Errorf("agent: call not made: %s USD could not be reserved (%w): %w", r.AmountUSD, ErrStoreUnavailable, err)
	}
	if ok {
		held, _ := parseUSD(st.Balance.ReservedUSD)
		st.Balance.ReservedUSD = formatUSD(decimal.Sub(held, estimate))
		st.Balance.Calls--
	}
	return id, ok, st, nil
}

// cancel withdraws reservation id, made before a decision not to run. An
// error leaves the hold to its lease.
func (g *Guard) cancel(id string) {
	ctx, cancel := g.bound(context.Background(), g.timeout)
	defer cancel()
	_ = g.store.Cancel(ctx, id)
}

// settle counts cost as spent for p's reservation and records entry (nil:
// record nothing), in one step when the ledger and the money share a store.
// It fills the settlement fields of rep and returns a recording or
// settlement error.
func (g *Guard) settle(p *Permit, cost decimal.Dec, entry *Entry, rep *Report) error {
	var recErr error
	record := entry
	if entry != nil {
		if g.ledger.store != g.store {
			recErr = g.ledger.Record(*entry)
			record = nil
		} else if recErr = validateEntry(*entry); recErr != nil {
			record = nil
		}
	}
	ctx, cancel := g.bound(context.Background(), g.settleFor)
	defer cancel()
	s, err := g.store.Settle(ctx, p.id, formatUSD(cost), record)
	if err != nil {
		g.noteLost(err)
		return errors.Join(recErr, fmt.Errorf("agent: the call ran, but its cost of %s USD could not be settled: %w", formatUSD(cost), err))
	}
	rep.SettledUSD = formatUSD(cost)
	if s.Duplicate && s.CostUSD != "" {
		rep.SettledUSD = s.CostUSD
	}
	if !s.Duplicate && !s.Late {
		// What the next call should see when nothing else happened in
		// the meantime: this call counted and its cost spent.
		next := p.seen
		next.Calls++
		if spent, err := parseUSD(next.SpentUSD); err == nil || next.SpentUSD == "" {
			next.SpentUSD = formatUSD(decimal.Add(spent, cost))
		}
		g.seen.Store(&next)
	}
	rep.LateSettlement, rep.DuplicateSettlement = s.Late, s.Duplicate
	rep.Recorded = entry != nil && recErr == nil
	return recErr
}

// noteLost counts err when it says the store's state was lost, so that
// calls of this Guard whose reservations were in flight meanwhile are not
// run (see Begin).
func (g *Guard) noteLost(err error) {
	if errors.Is(err, ErrStoreStateLost) {
		g.lost.Add(1)
	}
}
