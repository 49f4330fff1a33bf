package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/x402"
)

// Drain connects the paid route to the graceful shutdown of the program
// that serves it. Put one in [Config.Drain], call [Drain.Start] when
// shutdown begins, and if the shutdown grace runs out, log the request ids
// that [Drain.Settling] returns: their payments' outcome is unknown. The
// zero value is ready to use; a Drain serves one handler.
type Drain struct {
	mu       sync.Mutex
	started  bool
	settling map[*observation]string // verified payments without a settlement outcome, to their request ids
}

// Start tells the handler that shutdown has begun. From then on the paid
// route answers a request that carries a payment not yet sent to the
// facilitator with 503 server_busy and Retry-After: nothing is verified or
// charged, so every settlement that starts can finish within a grace of
// the verify and settle timeouts. Payments already being verified or
// settled go on and get their answer. Requests without a payment (the 402
// challenge) and the free routes are served as usual. Start may be called
// more than once.
func (d *Drain) Start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started = true
}

// Settling returns the request ids of the payments that the facilitator
// verified and whose settlement has no outcome yet, in no particular
// order. A program that exits before they finish should log them: each may
// or may not be charged.
func (d *Drain) Settling() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]string, 0, len(d.settling))
	for _, id := range d.settling {
		ids = append(ids, id)
	}
	return ids
}

// refuses reports whether shutdown has begun; a nil Drain never refuses.
func (d *Drain) refuses() bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started
}

// note follows a request's payment steps: a verified payment is settling
// until its settlement outcome is reported.
func (d *Drain) note(ctx context.Context, o x402.Outcome) {
	ob := observationFrom(ctx)
	if ob == nil {
		return
	}
	switch o {
	case x402.OutcomeVerified:
		d.mu.Lock()
		if d.settling == nil {
			d.settling = map[*observation]string{}
		}
		d.settling[ob] = ob.requestID
		d.mu.Unlock()
	case x402.OutcomeSettled, x402.OutcomeSettleFailed, x402.OutcomeUnknown:
		d.done(ctx)
	}
}

// done forgets the request's payment, if it was settling.
func (d *Drain) done(ctx context.Context) {
	if d == nil {
		return
	}
	if ob := observationFrom(ctx); ob != nil {
		d.mu.Lock()
		delete(d.settling, ob)
		d.mu.Unlock()
	}
}

// drainRetryAfter is the Retry-After of a payment refused during shutdown,
// in seconds: another instance, or this one restarted, can take it.
const drainRetryAfter = 1

// writeShuttingDown answers a payment refused because shutdown has begun.
func writeShuttingDown(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(drainRetryAfter))
	writeError(w, &preflight.Error{
		Code: ErrorServerBusy,
		Message: "the server is shutting down and takes no new payments; nothing was verified or charged; retry after " +
			strconv.Itoa(drainRetryAfter) + " s (another instance or the restarted server will answer)",
	})
}
