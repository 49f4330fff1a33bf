package agent

import "context"

// The locking of a Guard. Begin's decide-and-reserve step waits on a
// store across the network, so no lock that other calls need is held
// across it:
//
//   - g.mu, a plain mutex, guards the Guard's bookkeeping (the flights, the
//     turns and the gate below) and is never held across I/O or a
//     decision.
//   - A turn per fingerprint: calls with the same fingerprint decide and
//     reserve one at a time, since their decisions read each other's
//     outcome (history, flights in progress). Calls with different
//     fingerprints share only money, which the store's reserve checks and
//     holds in one atomic step, as for workers in different processes.
//   - The gate: SetCatalog, SetBudget and RaiseBudget wait until no
//     decision is under way and hold off new ones while they change the
//     Guard, so that a decision sees one catalog and one budget.
//
// A Begin waiting for its turn or at the gate gives up when its own
// context ends, instead of waiting out another call's I/O.
//
// A decision is tentative from the moment it holds its turn (its
// reservation is made next) until it is settled: it kept its reservation
// (its call runs) or withdrew it, and gave back its turn. A call deferred
// for want of money or of a call while another decision of the Guard was
// tentative may have been deferred for a hold that is then withdrawn: it
// withdraws its own reservation, settles, waits for the decisions that
// were tentative when it was deferred and decides again (see Begin). It
// waits only while it is settled itself, and only for decisions that do
// not wait, so two calls never wait for each other.

// turn is the fingerprint lock of the calls deciding, or waiting to
// decide, with one fingerprint. It lives in g.turns while refs > 0.
type turn struct {
	refs int           // calls holding or waiting for the turn
	busy bool          // a call holds the turn
	wake chan struct{} // closed when the turn is given back; nil when nobody waits

	// The decision of the call holding the turn.
	tentative bool   // it holds, or is about to make, a reservation it may withdraw
	ticket    uint64 // when it became tentative: g.tickets then
	gen       uint64 // g.withdrawals then
	held      bool   // the store may hold its reservation
	kept      bool   // its call runs: its reservation is real
}

// maxSpareTurns bounds the unused turns a Guard keeps for reuse.
const maxSpareTurns = 16

// enter takes the turn of fingerprint fp and passes the gate, or returns
// ctx.Err() when ctx ends first (having taken nothing). The returned turn
// is given back with leave.
func (g *Guard) enter(ctx context.Context, fp string) (*turn, error) {
	g.mu.Lock()
	t := g.turns[fp]
	if t == nil {
		if n := len(g.spareTurns); n > 0 {
			t = g.spareTurns[n-1]
			g.spareTurns = g.spareTurns[:n-1]
		} else {
			t = new(turn)
		}
		g.turns[fp] = t
	}
	t.refs++
	for t.busy {
		if t.wake == nil {
			t.wake = make(chan struct{})
		}
		w := t.wake
		g.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			g.mu.Lock()
			g.dropTurn(fp, t, false)
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		g.mu.Lock()
	}
	t.busy = true
	// A change waiting at the gate goes first: decisions wait for it.
	for g.changing || g.changesWaiting > 0 {
		w := g.gateWait()
		g.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			g.mu.Lock()
			g.dropTurn(fp, t, true)
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		g.mu.Lock()
	}
	g.deciding++
	g.tentate(t)
	g.mu.Unlock()
	return t, nil
}

// tentate marks the decision of the call holding t tentative. The caller
// holds g.mu.
func (g *Guard) tentate(t *turn) {
	t.tentative, t.held, t.kept = true, false, false
	t.ticket, t.gen = g.tickets, g.withdrawals
	g.tickets++
	g.tentative++
}

// settled marks the decision of the call holding t settled (a
// reservation it held, not kept, withdrawn), and wakes the calls waiting
// for it. The caller holds g.mu.
func (g *Guard) settled(t *turn) {
	if !t.tentative {
		return
	}
	t.tentative = false
	g.tentative--
	if t.held && !t.kept {
		g.withdrawals++
	}
	if g.settleWake != nil {
		close(g.settleWake)
		g.settleWake = nil
	}
}

// othersTentative is for the call holding t, deferred for want of money
// or of a call: it reports whether another decision of the Guard is
// tentative, or was settled without keeping its reservation since t's
// became tentative, so that the deferral may be due to a hold that is no
// more. limit is what awaitOthers waits for.
func (g *Guard) othersTentative(t *turn) (limit uint64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tickets, g.tentative > 1 || g.withdrawals != t.gen
}

// awaitOthers settles the decision of the call holding t, whose
// reservation was withdrawn, waits until no decision that became
// tentative before limit still is, and marks t's decision tentative again
// for the next one. It returns ctx.Err() when ctx ends first, t's
// decision then settled.
func (g *Guard) awaitOthers(ctx context.Context, t *turn, limit uint64) error {
	g.mu.Lock()
	g.settled(t)
	for g.tentativeBefore(limit) {
		if g.settleWake == nil {
			g.settleWake = make(chan struct{})
		}
		w := g.settleWake
		g.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
		g.mu.Lock()
	}
	g.tentate(t)
	g.mu.Unlock()
	return nil
}

// tentativeBefore reports whether a decision that became tentative before
// limit still is. The caller holds g.mu.
func (g *Guard) tentativeBefore(limit uint64) bool {
	if g.tentative == 0 {
		return false
	}
	for _, t := range g.turns {
		if t.tentative && t.ticket < limit {
			return true
		}
	}
	return false
}

// leave gives back the turn of fp that enter returned and the place at
// the gate.
func (g *Guard) leave(fp string, t *turn) {
	g.mu.Lock()
	g.settled(t)
	g.deciding--
	if g.deciding == 0 {
		g.gateOpen()
	}
	g.dropTurn(fp, t, true)
	g.mu.Unlock()
}

// dropTurn lets go of t: held, it is given back and the calls waiting
// for it wake up; not held, the caller stops waiting for it. The caller
// holds g.mu.
func (g *Guard) dropTurn(fp string, t *turn, held bool) {
	if held {
		t.busy = false
	}
	if t.refs--; t.refs > 0 {
		if held && t.wake != nil {
			close(t.wake)
			t.wake = nil
		}
		return
	}
	delete(g.turns, fp)
	if len(g.spareTurns) < maxSpareTurns {
		*t = turn{}
		g.spareTurns = append(g.spareTurns, t)
	}
}

// gateWait returns the channel closed at the gate's next change. The
// caller holds g.mu.
func (g *Guard) gateWait() chan struct{} {
	if g.gateWake == nil {
		g.gateWake = make(chan struct{})
	}
	return g.gateWake
}

// gateOpen wakes whoever waits at the gate. The caller holds g.mu.
func (g *Guard) gateOpen() {
	if g.gateWake != nil {
		close(g.gateWake)
		g.gateWake = nil
	}
}

// change runs f with no decision under way and none starting: what
// SetCatalog and SetBudget change is read once by each decision. It
// waits for the decisions under way (which are bounded by the store's
// deadlines), however long they take.
func (g *Guard) change(f func()) {
	g.mu.Lock()
	g.changesWaiting++
	for g.changing || g.deciding > 0 {
		w := g.gateWait()
		g.mu.Unlock()
		<-w
		g.mu.Lock()
	}
	g.changesWaiting--
	g.changing = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.changing = false
		g.gateOpen()
		g.mu.Unlock()
	}()
	f()
}
