package x402

import "encoding/json"

// Version is the x402 protocol version this package speaks.
const Version = 2

// ResourceInfo describes the paid resource (x402 v2 specification §5.1.2).
type ResourceInfo struct {
	// URL is the absolute URL of the resource.
	URL string `json:"url"`
	// Description is optional prose for a person.
	Description string `json:"description,omitempty"`
	// MimeType is the media type of the paid response, optional.
	MimeType string `json:"mimeType,omitempty"`
}

// PaymentRequirements is one way to pay: an entry of
// [PaymentRequired].Accepts, and the client's copy of it in
// [PaymentPayload].Accepted.
type PaymentRequirements struct {
	Scheme  string `json:"scheme"`  // "exact"
	Network string `json:"network"` // CAIP-2, e.g. "eip155:8453"
	Amount  string `json:"amount"`  // atomic units as a decimal string
	Asset   string `json:"asset"`   // token contract address
	PayTo   string `json:"payTo"`   // recipient address
	// MaxTimeoutSeconds is the authorization window the client should sign.
	MaxTimeoutSeconds int `json:"maxTimeoutSeconds"`
	// Extra is scheme-specific; for EIP-3009 tokens it carries the EIP-712
	// domain {"name","version"}. Kept as raw JSON so a client's copy passes
	// through unchanged. Nil is omitted.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// PaymentRequired is the challenge, base64-encoded in the PAYMENT-REQUIRED
// header of a 402.
type PaymentRequired struct {
	X402Version int                   `json:"x402Version"`
	Error       string                `json:"error,omitempty"` // why payment is (again) required
	Resource    ResourceInfo          `json:"resource"`
	Accepts     []PaymentRequirements `json:"accepts"`
	Extensions  json.RawMessage       `json:"extensions,omitempty"`
}

// PaymentPayload is what a client sends, base64-encoded, in the
// PAYMENT-SIGNATURE header.
type PaymentPayload struct {
	X402Version int                 `json:"x402Version"`
	Resource    *ResourceInfo       `json:"resource,omitempty"`
	Accepted    PaymentRequirements `json:"accepted"`
	// Payload is the scheme-specific signed authorization, kept as raw JSON
	// and passed to the facilitator unchanged.
	Payload    json.RawMessage `json:"payload"`
	Extensions json.RawMessage `json:"extensions,omitempty"`
}

// VerifyResponse is the facilitator's answer to POST /verify.
type VerifyResponse struct {
	IsValid        bool   `json:"isValid"`
	InvalidReason  string `json:"invalidReason,omitempty"`
	InvalidMessage string `json:"invalidMessage,omitempty"`
	Payer          string `json:"payer,omitempty"`
}

// SettleResponse is the facilitator's answer to POST /settle, and the
// content of the PAYMENT-RESPONSE header.
type SettleResponse struct {
	Success      bool   `json:"success"`
	ErrorReason  string `json:"errorReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Payer        string `json:"payer,omitempty"`
	// Transaction is the transaction hash; "" when settlement failed.
	Transaction string          `json:"transaction"`
	Network     string          `json:"network"`
	Amount      string          `json:"amount,omitempty"`
	Extensions  json.RawMessage `json:"extensions,omitempty"`
}

// SupportedKind is one (version, scheme, network) a facilitator handles.
type SupportedKind struct {
	X402Version int             `json:"x402Version"`
	Scheme      string          `json:"scheme"`
	Network     string          `json:"network"`
	Extra       json.RawMessage `json:"extra,omitempty"`
}

// SupportedResponse is the facilitator's answer to GET /supported.
type SupportedResponse struct {
	Kinds      []SupportedKind     `json:"kinds"`
	Extensions []string            `json:"extensions,omitempty"`
	Signers    map[string][]string `json:"signers,omitempty"`
}

// facilitatorRequest is the body of POST /verify and POST /settle.
type facilitatorRequest struct {
	X402Version         int                 `json:"x402Version"`
	PaymentPayload      PaymentPayload      `json:"paymentPayload"`
	PaymentRequirements PaymentRequirements `json:"paymentRequirements"`
}
