package x402

import "context"

// Outcome names one step of a payment's life on the paid route, as reported
// to [Config.Observe]. A request that pays reports OutcomeVerified, then
// exactly one settlement outcome.
type Outcome string

// The outcomes, one per branch of [Paywall.Handle].
const (
	// OutcomeChallengeSent: a 402 with a fresh challenge, because the request
	// carried no payment, a payment for other terms, or one already in flight.
	OutcomeChallengeSent Outcome = "challenge_sent"
	// OutcomeMalformed: PAYMENT-SIGNATURE could not be decoded (400).
	OutcomeMalformed Outcome = "malformed"
	// OutcomeBusy: as many payments as [Config.MaxFacilitatorCalls] allows
	// were already with the facilitator, so this one was refused (503
	// server_busy with Retry-After) before any call; nothing was charged.
	OutcomeBusy Outcome = "busy"
	// OutcomeVerified: the facilitator accepted the payment.
	OutcomeVerified Outcome = "verified"
	// OutcomeVerifyFailed: the facilitator rejected the payment (402).
	OutcomeVerifyFailed Outcome = "verify_failed"
	// OutcomeFacilitatorError: /verify gave no usable answer (503); nothing
	// was charged.
	OutcomeFacilitatorError Outcome = "facilitator_error"
	// OutcomeClientGone: the client disconnected while its payment was
	// being verified; nothing was charged. It is not the facilitator's
	// failure, so it is counted apart from OutcomeFacilitatorError.
	OutcomeClientGone Outcome = "client_gone"
	// OutcomeSettled: the payment settled and the decision was released.
	OutcomeSettled Outcome = "settled"
	// OutcomeSettleFailed: the facilitator definitely did not settle (402).
	OutcomeSettleFailed Outcome = "settle_failed"
	// OutcomeUnknown: /settle gave no usable answer, or the settlement is
	// pending (503); the payment may or may not land.
	OutcomeUnknown Outcome = "outcome_unknown"
)

// Outcomes lists every Outcome, for initializing counters.
var Outcomes = []Outcome{
	OutcomeChallengeSent, OutcomeMalformed, OutcomeBusy, OutcomeVerified, OutcomeVerifyFailed,
	OutcomeFacilitatorError, OutcomeClientGone, OutcomeSettled, OutcomeSettleFailed, OutcomeUnknown,
}

// observe reports o to the configured observer, if any.
func (p *Paywall) observe(ctx context.Context, o Outcome) {
	if p.cfg.Observe != nil {
		p.cfg.Observe(ctx, o)
	}
}
