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

// state reads the balance from the Guard's store and the history entries
// of fingerprint fp from the ledger's (one read when they are the same
// store), within the Guard's StoreTimeout. The caller holds g.mu.
func (g *Guard) state(ctx context.Context, fp string) (LedgerState, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	st, err := g.store.StateOf(ctx, fp)
	if err == nil && g.ledger.store != g.store {
		var h LedgerState
		h, err = g.ledger.store.StateOf(ctx, fp)
		st.History, st.Now = h.History, h.Now
	}
	if err != nil {
		return LedgerState{}, fmt.Errorf("agent: call not made: its history and budget could not be read (%w): %w", ErrStoreUnavailable, err)
	}
	return st, nil
}

// fill puts the history and, as configured, the money and calls left into
// req.
func (g *Guard) fill(req *preflight.ToolCallRequest, st LedgerState) {
	req.History = historyOf(st)
	spent, _ := parseUSD(st.Balance.SpentUSD)
	held, _ := parseUSD(st.Balance.ReservedUSD)
	if g.budget != nil {
		left := decimal.Sub(*g.budget, spent)
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

// reserve holds estimate and one call in the Guard's store. ok is false
// when the store refused: the limits no longer hold.
func (g *Guard) reserve(ctx context.Context, req preflight.ToolCallRequest, rep Report, estimate decimal.Dec) (*Permit, bool, error) {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	// Started: the permit's call runs as soon as Begin returns it.
	r := Reservation{ID: id, AmountUSD: formatUSD(estimate), MaxCalls: g.maxCalls, Lease: g.lease, Started: true}
	if g.budget != nil {
		r.LimitUSD = formatUSD(*g.budget)
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	ok, _, err := g.store.Reserve(ctx, r)
	if err != nil {
		return nil, false, fmt.Errorf("agent: call not made: %s USD could not be reserved (%w): %w", r.AmountUSD, ErrStoreUnavailable, err)
	}
	if !ok {
		return nil, false, nil
	}
	rep.ReservedUSD = r.AmountUSD
	return &Permit{g: g, req: req, rep: rep, estimate: estimate, id: id}, true, nil
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
	ctx, cancel := context.WithTimeout(context.Background(), g.settleFor)
	defer cancel()
	s, err := g.store.Settle(ctx, p.id, formatUSD(cost), record)
	if err != nil {
		return errors.Join(recErr, fmt.Errorf("agent: the call ran, but its cost of %s USD could not be settled: %w", formatUSD(cost), err))
	}
	rep.SettledUSD = formatUSD(cost)
	if s.Duplicate && s.CostUSD != "" {
		rep.SettledUSD = s.CostUSD
	}
	rep.LateSettlement, rep.DuplicateSettlement = s.Late, s.Duplicate
	rep.Recorded = entry != nil && recErr == nil
	return recErr
}
