package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/agentpreflight/preflight/server/internal/x402"
)

// serveCheck answers POST /check-request. With Config.Receipts, a 200
// carries the receipt of its body in the Preflight-Receipt header.
func (h *handler) serveCheck(w http.ResponseWriter, r *http.Request) {
	data, perr := readBody(w, r)
	if perr != nil {
		writeError(w, perr)
		return
	}
	prev, perr := receiptPrev(r)
	if perr != nil {
		writeError(w, perr)
		return
	}
	release := h.gate.enter(r.Context())
	if release == nil {
		h.gate.writeBusy(w)
		return
	}
	defer release()
	res, err := preflight.CheckJSON(data)
	if err != nil {
		h.writeLibraryError(w, r, err)
		return
	}
	noteCheck(r.Context(), res)
	body, err := json.Marshal(res)
	if err != nil {
		h.writeLibraryError(w, r, err)
		return
	}
	rc, err := h.signAnswer(body, prev)
	if err != nil {
		h.writeLibraryError(w, r, err)
		return
	}
	if rc != nil {
		w.Header().Set(receipt.Header, string(rc))
	}
	writeJSON(w, http.StatusOK, body)
}

// toolCallPath is the path of the paid route; the x402 resource URL is the
// base URL followed by it.
const toolCallPath = "/v0.2/preflight/tool-call"

// serveToolCall answers POST /v0.2/preflight/tool-call. Input errors are a
// free 400 before any payment step; a decision is written directly when the
// route is unpaid, or handed to the paywall, which settles payment before
// releasing it. Once Config.Drain has started, a request carrying a payment
// is refused before the paywall sees it. With Config.Receipts, the 200 that
// carries the decision (and only it: never a 402 or 503 that withholds it)
// carries the decision's receipt in the Preflight-Receipt header.
func (h *handler) serveToolCall(w http.ResponseWriter, r *http.Request) {
	data, perr := readBody(w, r)
	if perr != nil {
		writeError(w, perr)
		return
	}
	prev, perr := receiptPrev(r)
	if perr != nil {
		writeError(w, perr)
		return
	}
	if h.cfg.Payment == nil {
		// The answer is written before serveToolCall returns and kept
		// nowhere else, so its buffer is reused.
		buf := answerBufs.Get().(*[]byte)
		defer answerBufs.Put(buf)
		data = h.answerUnpaid(w, r, data, prev, (*buf)[:0])
		if cap(data) <= maxPooledAnswer {
			*buf = data[:0]
		}
		return
	}
	body, busy, err := h.decide(r.Context(), data, nil)
	if busy {
		h.gate.writeBusy(w)
		return
	}
	if err != nil {
		h.writeLibraryError(w, r, err)
		return
	}
	if h.paywall == nil {
		writeError(w, &preflight.Error{
			Code:    ErrorPaymentUnavailable,
			Message: "payment is required on this route but the server's payment configuration is invalid; no payment was requested or taken",
		})
		return
	}
	if r.Header.Get(x402.HeaderPaymentSignature) != "" && h.cfg.Drain.refuses() {
		writeShuttingDown(w)
		return
	}
	defer h.cfg.Drain.done(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// The receipt is signed only for a verified payment, and sent only
	// with the settled 200.
	var rw *receiptOnOK
	if h.cfg.Receipts != nil {
		rw = &receiptOnOK{ResponseWriter: w}
		w = rw
	}
	h.paywall.Handle(w, r, h.baseURL(r)+toolCallPath, func() (int, []byte) {
		if rw != nil {
			rc, err := h.signAnswer(body, prev)
			if err != nil {
				h.log.ErrorContext(r.Context(), "the decision could not be signed", "error", err.Error())
				b, _ := json.Marshal(&preflight.Error{Code: ErrorInternalError, Message: "the server failed to sign the decision; this is a bug; nothing was charged"})
				return http.StatusInternalServerError, b
			}
			rw.value = string(rc)
		}
		return http.StatusOK, body
	})
}

// answerUnpaid answers a tool-call body on the unpaid route: the decision,
// with its receipt when the server signs them. It encodes the decision
// into buf and returns the buffer it used, so that the caller can reuse it.
func (h *handler) answerUnpaid(w http.ResponseWriter, r *http.Request, data []byte, prev string, buf []byte) []byte {
	body, busy, err := h.decide(r.Context(), data, buf)
	if busy {
		h.gate.writeBusy(w)
		return buf
	}
	if err != nil {
		h.writeLibraryError(w, r, err)
		return buf
	}
	rc, err := h.signAnswer(body, prev)
	if err != nil {
		h.writeLibraryError(w, r, err)
		return body
	}
	if rc != nil {
		w.Header().Set(receipt.Header, string(rc))
	}
	writeJSON(w, http.StatusOK, body)
	return body
}

// Answer buffers of the unpaid tool-call route, kept between requests.
// One that grew past maxPooledAnswer (a decision listing many issues) is
// dropped rather than kept.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledAnswer = 16 << 10

// decide decodes a tool-call body and encodes its decision, holding a gate
// slot only for that work (never across the paywall's facilitator calls).
// The decision is appended to buf (nil: a new buffer). busy reports that
// no slot came free in time.
func (h *handler) decide(ctx context.Context, data, buf []byte) (body []byte, busy bool, err error) {
	release := h.gate.enter(ctx)
	if release == nil {
		return nil, true, nil
	}
	defer release()
	dec, err := h.cfg.Catalog.DecideJSON(data)
	if err != nil {
		return nil, false, err
	}
	noteDecision(ctx, dec)
	if buf == nil {
		buf = make([]byte, 0, 512) // a decision without issues is about 350 bytes
	}
	body, err = appendDecisionJSON(buf, dec)
	return body, false, err
}

// serveUsageDump answers POST /v0.2/usage/dump: the capability is reserved
// and always unavailable. The body is never read.
func serveUsageDump(w http.ResponseWriter, r *http.Request) {
	writeError(w, &preflight.Error{
		Code:    ErrorCapabilityUnavailable,
		Message: "usage export is not a public capability of this service",
	})
}

// serveHealth answers GET /health.
func serveHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
}
