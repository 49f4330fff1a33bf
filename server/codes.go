package server

import (
	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/respond"
)

// Error codes only the server returns, in the same error envelope as the
// library's [preflight.ErrorCode] values (which all answer 400). Each maps to
// one HTTP status. The three the paywall writes too are defined once, in
// server/internal/respond.
const (
	ErrorUnsupportedMediaType       preflight.ErrorCode = "unsupported_media_type"       // 400: Content-Type is not JSON
	ErrorUnsupportedContentEncoding preflight.ErrorCode = "unsupported_content_encoding" // 400: the body has a Content-Encoding other than identity (the answer carries Accept-Encoding: identity)
	ErrorPayloadTooLarge            preflight.ErrorCode = "payload_too_large"            // 413: body over MaxBodyBytes
	ErrorNotFound                   preflight.ErrorCode = "not_found"                    // 404: no such route
	ErrorMethodNotAllowed           preflight.ErrorCode = "method_not_allowed"           // 405: the Allow header lists the right methods
	ErrorForbidden                  preflight.ErrorCode = "forbidden"                    // 403: /mcp refused a non-loopback Host on a loopback connection (DNS-rebinding protection)
	ErrorCapabilityUnavailable      preflight.ErrorCode = "capability_unavailable"       // 503: the reserved usage-dump route
	ErrorInternalError              preflight.ErrorCode = "internal_error"               // 500: a bug in the server; never expected
	ErrorServerBusy                                     = respond.ServerBusy             // 503 with Retry-After: too many requests being evaluated at once, too many payments with the facilitator at once, or a payment arriving during shutdown; nothing was charged

	ErrorPaymentRequired    = respond.PaymentRequired    // 402: pay, then retry with PAYMENT-SIGNATURE
	ErrorPaymentUnavailable = respond.PaymentUnavailable // 503: payment misconfigured, or the facilitator failed
)
