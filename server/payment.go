package server

import (
	"log/slog"
	"time"

	"github.com/agentpreflight/preflight/server/internal/x402"
)

// Payment makes POST /v0.2/preflight/tool-call paid with x402 version 2:
// the "exact" scheme, $0.002 in USDC per settled request. A request without
// a valid payment gets 402 with the challenge; the decision is returned
// only once the facilitator has settled the payment.
type Payment struct {
	// PayTo is the recipient address: 0x + 40 hex digits; a mixed-case
	// address must be a valid EIP-55 checksum. The zero address is refused.
	PayTo string
	// Network is the CAIP-2 chain: "eip155:8453" (Base, the default when
	// empty) or "eip155:84532" (Base Sepolia).
	Network string
	// FacilitatorURL is the base URL of the x402 facilitator; its /verify
	// and /settle endpoints hang below it. Required: https, or http to a
	// loopback host only (payloads are signed authorizations).
	FacilitatorURL string
	// MaxTimeoutSeconds is the authorization window offered to clients,
	// 35..3600; 0 means 60. It must cover VerifyTimeout + SettleTimeout
	// + 10 s.
	MaxTimeoutSeconds int
	// VerifyTimeout bounds one /verify call; 0 means 10 s.
	VerifyTimeout time.Duration
	// SettleTimeout bounds one /settle call; 0 means 15 s.
	SettleTimeout time.Duration
	// MaxFacilitatorCalls bounds the payments being verified or settled at
	// once; 0 means 32. A payment beyond it is answered 503 server_busy
	// with Retry-After before the facilitator is called.
	MaxFacilitatorCalls int
}

// Validate reports the first misconfiguration with a message saying what
// is expected. It does no I/O. [New] accepts an invalid Payment but then
// answers the paid route with 503 payment_unavailable; call Validate to
// fail at start-up instead.
func (p Payment) Validate() error { return p.config(nil).Validate() }

// config is p as the paywall's configuration, logging to log.
func (p Payment) config(log *slog.Logger) x402.Config {
	return x402.Config{
		PayTo:               p.PayTo,
		Network:             p.Network,
		FacilitatorURL:      p.FacilitatorURL,
		MaxTimeoutSeconds:   p.MaxTimeoutSeconds,
		VerifyTimeout:       p.VerifyTimeout,
		SettleTimeout:       p.SettleTimeout,
		MaxFacilitatorCalls: p.MaxFacilitatorCalls,
		Logger:              log,
	}
}
