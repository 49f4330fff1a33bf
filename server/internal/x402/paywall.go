package x402

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/respond"
	"github.com/agentpreflight/preflight/strictjson"
)

// Header names of x402 v2 over HTTP.
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
)

// Reasons put in the challenge's "error" field by the paywall itself (a
// failed verification carries the facilitator's invalidReason instead).
const (
	ReasonPaymentRequired = "Payment required"
	ReasonNoMatch         = "No matching payment requirements"
	ReasonInFlight        = "payment_already_in_progress"
)

// ReasonSettlementPending is the errorReason of a facilitator that broadcast
// the transfer but saw no receipt in time. Handle answers it with 503
// payment_unavailable and the facilitator's PAYMENT-RESPONSE (which names
// the transaction), never with the decision and never as "not charged".
const ReasonSettlementPending = "settlement_pending"

// Paywall runs the x402 v2 exact-scheme flow for one route, $0.002 USDC per
// settled request. It is safe for concurrent use; its only state is the set
// of payments being processed right now, keyed by payment identity (see
// paymentKey), and the count of them with the facilitator.
type Paywall struct {
	cfg    Config
	offer  PaymentRequirements
	fac    *Facilitator
	logger *slog.Logger
	calls  chan struct{} // one token per payment with the facilitator (verify through settle)

	mu       sync.Mutex
	inFlight map[[32]byte]struct{}
}

// New validates cfg and returns a Paywall. It does no I/O (it does not call
// /supported). An invalid cfg gives the [Config.Validate] error and no
// Paywall.
func New(cfg Config) (*Paywall, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Paywall{
		cfg:      cfg,
		offer:    cfg.requirements(),
		fac:      NewFacilitator(cfg.FacilitatorURL, cfg.HTTPClient),
		logger:   logger,
		inFlight: make(map[[32]byte]struct{}),
		calls:    make(chan struct{}, cfg.maxFacilitatorCalls()),
	}, nil
}

// Requirements returns the single offer every challenge carries.
func (p *Paywall) Requirements() PaymentRequirements {
	r := p.offer
	r.Extra = append(json.RawMessage(nil), p.offer.Extra...)
	return r
}

// Facilitator returns the paywall's facilitator client, for example to call
// [Facilitator.Supported] in a readiness check.
func (p *Paywall) Facilitator() *Facilitator { return p.fac }

// Handle runs the flow for a request whose body the caller has ALREADY
// decoded and validated (a doomed request gets a free 400 from the caller and
// never reaches Handle). resourceURL is the absolute URL of the route, used
// in the challenge's resource.url; "" means the request's own URL. produce
// computes the paid answer: Handle calls it only after successful
// verification, at most once, and settles only when it returns 200. A
// non-200 answer is written as it is (Content-Type application/json unless
// the caller set one) and costs nothing. See the package doc for every
// outcome. Handle never reads r.Body.
func (p *Paywall) Handle(w http.ResponseWriter, r *http.Request, resourceURL string, produce func() (status int, body []byte)) {
	if resourceURL == "" {
		resourceURL = requestURL(r)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")

	sig := r.Header.Get(HeaderPaymentSignature)
	if sig == "" {
		p.observe(r.Context(), OutcomeChallengeSent)
		p.challenge(w, resourceURL, ReasonPaymentRequired,
			"this route costs $"+PriceUSD+" USDC per settled request; pay with x402 version 2 as described in the PAYMENT-REQUIRED header and retry with PAYMENT-SIGNATURE")
		return
	}
	payload, key, err := decodePayload(sig)
	if err != nil {
		p.observe(r.Context(), OutcomeMalformed)
		writeError(w, http.StatusBadRequest, preflight.ErrorInvalidRequest,
			"the PAYMENT-SIGNATURE header is malformed: "+err.Error()+"; want padded standard base64 of a JSON PaymentPayload with x402Version 2, an accepted object and a payload object",
			issues(err)...)
		return
	}
	if field := p.mismatch(payload.Accepted); field != "" {
		p.observe(r.Context(), OutcomeChallengeSent)
		p.challenge(w, resourceURL, ReasonNoMatch,
			"the payment's accepted."+field+" does not match this route's offer; pay the requirements in the PAYMENT-REQUIRED header")
		return
	}
	if !p.claim(key) {
		p.observe(r.Context(), OutcomeChallengeSent)
		p.challenge(w, resourceURL, ReasonInFlight,
			"this payment is already being processed by another request; it is never used twice")
		return
	}
	defer p.release(key)
	// The place is held until settlement ends, so a verified payment never
	// waits for one; a payment that finds none is refused before /verify.
	select {
	case p.calls <- struct{}{}:
		defer func() { <-p.calls }()
	default:
		p.observe(r.Context(), OutcomeBusy)
		h.Set("Retry-After", strconv.Itoa(busyRetryAfter))
		writeError(w, http.StatusServiceUnavailable, ErrorServerBusy,
			"the server is processing as many payments as it allows at once ("+strconv.Itoa(cap(p.calls))+
				"); this one was not sent to the facilitator and nothing was charged; retry after "+strconv.Itoa(busyRetryAfter)+" s")
		return
	}

	vctx, cancel := context.WithTimeout(r.Context(), p.cfg.verifyTimeout())
	vr, err := p.fac.Verify(vctx, payload, p.offer)
	cancel()
	if err != nil && r.Context().Err() != nil {
		// The client hung up: no one is waiting for an answer, and the
		// facilitator is not to blame.
		p.logger.LogAttrs(r.Context(), slog.LevelInfo, "x402 verify abandoned: the client disconnected", slog.String("error", err.Error()))
		p.observe(r.Context(), OutcomeClientGone)
		return
	}
	if err != nil {
		p.logger.LogAttrs(r.Context(), slog.LevelWarn, "x402 verify failed", slog.String("error", err.Error()))
		p.observe(r.Context(), OutcomeFacilitatorError)
		writeError(w, http.StatusServiceUnavailable, ErrorPaymentUnavailable,
			"the payment facilitator could not verify the payment (unreachable, too slow or an unreadable answer); nothing was charged; try again later")
		return
	}
	if !vr.IsValid {
		reason := strictjson.Clip(vr.InvalidReason)
		if reason == "" {
			reason = "invalid_payment"
		}
		p.observe(r.Context(), OutcomeVerifyFailed)
		p.challenge(w, resourceURL, reason, "the payment facilitator rejected the payment: "+reason+"; nothing was charged")
		return
	}

	p.observe(r.Context(), OutcomeVerified)
	status, body := produce()
	if status != http.StatusOK {
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		w.Write(body)
		return
	}

	// Settlement outlives the client: once /settle is sent the payment may
	// land on chain whatever happens to the connection, so the call runs on
	// a context that the client's disconnect does not cancel, bounded by
	// its own deadline, and its outcome is always logged.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), p.cfg.settleTimeout())
	sr, err := p.fac.Settle(sctx, payload, p.offer)
	cancel()
	logCtx := context.WithoutCancel(r.Context())
	clientGone := slog.Bool("client_gone", r.Context().Err() != nil)
	if err != nil {
		p.logger.LogAttrs(logCtx, slog.LevelError, "x402 settle failed, outcome unknown",
			slog.String("error", err.Error()), slog.String("payer", strictjson.Clip(vr.Payer)), clientGone)
		p.observe(logCtx, OutcomeUnknown)
		writeError(w, http.StatusServiceUnavailable, ErrorPaymentUnavailable,
			"the payment facilitator did not confirm settlement (unreachable, too slow or an unreadable answer), so no decision is returned; do not replay this payment blindly: its outcome is unknown")
		return
	}
	if sr.Network == "" {
		sr.Network = p.offer.Network
	}
	if sr.Payer == "" {
		sr.Payer = vr.Payer
	}
	if !sr.Success && sr.ErrorReason == ReasonSettlementPending {
		// Broadcast but unconfirmed: the payment may still land, so this is
		// neither a charge we can confirm nor a refusal. Pass the receipt on
		// (it names the transaction) and withhold the decision.
		p.logSettlement(logCtx, slog.LevelError, "x402 settlement pending, outcome unknown", sr, clientGone)
		h.Set(HeaderPaymentResponse, receiptHeader(sr))
		p.observe(logCtx, OutcomeUnknown)
		writeError(w, http.StatusServiceUnavailable, ErrorPaymentUnavailable,
			"settlement was submitted but not confirmed, so no decision is returned; the PAYMENT-RESPONSE header names the transaction; do not replay this payment blindly: its outcome is unknown")
		return
	}
	if !sr.Success {
		if sr.ErrorReason == "" {
			sr.ErrorReason = "settlement_failed"
		}
		p.logSettlement(logCtx, slog.LevelWarn, "x402 settlement refused", sr, clientGone)
		sr.ErrorReason = strictjson.Clip(sr.ErrorReason)
		sr.Transaction = ""
		h.Set(HeaderPaymentResponse, receiptHeader(sr))
		p.observe(logCtx, OutcomeSettleFailed)
		p.challenge(w, resourceURL, sr.ErrorReason,
			"settlement failed ("+sr.ErrorReason+"), so no decision is returned and nothing was charged; see PAYMENT-RESPONSE")
		return
	}
	p.logSettlement(logCtx, slog.LevelInfo, "x402 settled", sr, clientGone)
	h.Set(HeaderPaymentResponse, receiptHeader(sr))
	p.observe(logCtx, OutcomeSettled)
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// logSettlement logs the outcome of a settle call with the facilitator's
// full answer: transaction, payer, network, amount, and any reason, message
// and extensions, unclipped (the PAYMENT-RESPONSE header carries a clipped
// copy). The request id comes from ctx through the logger's handler, when
// the server puts one there.
func (p *Paywall) logSettlement(ctx context.Context, level slog.Level, msg string, sr SettleResponse, clientGone slog.Attr) {
	amount := sr.Amount
	if amount == "" {
		// The facilitator may leave it out; the exact scheme pays exactly
		// what the offer asks.
		amount = p.offer.Amount
	}
	attrs := []slog.Attr{
		slog.String("transaction", sr.Transaction),
		slog.String("payer", sr.Payer),
		slog.String("network", sr.Network),
		slog.String("amount", amount),
		clientGone,
	}
	if sr.ErrorReason != "" {
		attrs = append(attrs, slog.String("reason", sr.ErrorReason))
	}
	if sr.ErrorMessage != "" {
		attrs = append(attrs, slog.String("facilitator_message", sr.ErrorMessage))
	}
	if len(sr.Extensions) > 0 {
		attrs = append(attrs, slog.String("facilitator_extensions", string(sr.Extensions)))
	}
	p.logger.LogAttrs(ctx, level, msg, attrs...)
}

// decodePayload decodes and checks the shape of a PAYMENT-SIGNATURE value
// and returns it with its in-flight key (see readPayment and paymentKey).
func decodePayload(sig string) (PaymentPayload, [32]byte, error) {
	var shape struct {
		X402Version json.RawMessage `json:"x402Version"`
		Accepted    json.RawMessage `json:"accepted"`
		Payload     json.RawMessage `json:"payload"`
	}
	if err := DecodeHeader(sig, &shape); err != nil {
		var pe *payloadError
		if errors.As(err, &pe) {
			return PaymentPayload{}, [32]byte{}, pe
		}
		return PaymentPayload{}, [32]byte{}, errors.New(strings.TrimPrefix(err.Error(), "x402: "))
	}
	if string(shape.X402Version) != "2" {
		return PaymentPayload{}, [32]byte{}, errors.New("x402Version is not 2")
	}
	if !isObject(shape.Accepted) {
		return PaymentPayload{}, [32]byte{}, errors.New("accepted is not an object")
	}
	if !isObject(shape.Payload) {
		return PaymentPayload{}, [32]byte{}, errors.New("payload is not an object")
	}
	var p PaymentPayload
	if err := DecodeHeader(sig, &p); err != nil {
		var pe *payloadError
		if errors.As(err, &pe) {
			return PaymentPayload{}, [32]byte{}, pe
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return PaymentPayload{}, [32]byte{}, fmt.Errorf("%s is a JSON %s; want a JSON %s", ute.Field, ute.Value, jsonKind(ute.Type))
		}
		return PaymentPayload{}, [32]byte{}, errors.New("a member has the wrong type")
	}
	id, err := readPayment(p)
	if err != nil {
		return PaymentPayload{}, [32]byte{}, err
	}
	return p, paymentKey(id), nil
}

// jsonKind names the JSON type that decodes into t.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice:
		return "array"
	default:
		return "object"
	}
}

func isObject(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '{'
}

// mismatch names the first field of a that differs from the offer, or "".
func (p *Paywall) mismatch(a PaymentRequirements) string {
	switch {
	case a.Scheme != p.offer.Scheme:
		return "scheme"
	case a.Network != p.offer.Network:
		return "network"
	case a.Amount != p.offer.Amount:
		return "amount"
	case !strings.EqualFold(a.Asset, p.offer.Asset):
		return "asset"
	case !strings.EqualFold(a.PayTo, p.offer.PayTo):
		return "payTo"
	}
	return ""
}

func (p *Paywall) claim(key [32]byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, busy := p.inFlight[key]; busy {
		return false
	}
	p.inFlight[key] = struct{}{}
	return true
}

func (p *Paywall) release(key [32]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inFlight, key)
}

// challenge writes a 402 with a fresh PAYMENT-REQUIRED and the envelope.
func (p *Paywall) challenge(w http.ResponseWriter, resourceURL, reason, message string) {
	pr := PaymentRequired{
		X402Version: Version,
		Error:       reason,
		Resource:    ResourceInfo{URL: resourceURL, Description: p.cfg.Description, MimeType: "application/json"},
		Accepts:     []PaymentRequirements{p.offer},
	}
	enc, err := EncodeHeader(pr)
	if err != nil { // unreachable: every field marshals
		writeError(w, http.StatusServiceUnavailable, ErrorPaymentUnavailable, "the payment challenge could not be encoded")
		return
	}
	w.Header().Set(HeaderPaymentRequired, enc)
	writeError(w, http.StatusPaymentRequired, ErrorPaymentRequired, message)
}

// writeError writes the service's error envelope.
func writeError(w http.ResponseWriter, status int, code preflight.ErrorCode, message string, details ...preflight.Issue) {
	respond.WriteError(w, status, &preflight.Error{Code: code, Message: message, Details: details})
}

func requestURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s%s", scheme, r.Host, r.URL.RequestURI())
}

// The error codes of the paywall's own answers, in the service's error
// envelope.
const (
	ErrorPaymentRequired    = respond.PaymentRequired    // 402: the challenge
	ErrorPaymentUnavailable = respond.PaymentUnavailable // 503: misconfigured, or the facilitator failed
	ErrorServerBusy         = respond.ServerBusy         // 503 with Retry-After: MaxFacilitatorCalls payments already with the facilitator
)

// busyRetryAfter is the Retry-After, in seconds, of a payment refused
// because MaxFacilitatorCalls were in progress: an honest call takes a
// second or two.
const busyRetryAfter = 1
