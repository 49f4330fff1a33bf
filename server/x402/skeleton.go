package x402

import (
	"errors"
	"net/http"
)

// Config configures payment for one route. The zero value is invalid (no recipient).
type Config struct {
	PayTo             string       // recipient address: 0x + 40 hex; mixed case must be a valid EIP-55 checksum
	Network           string       // CAIP-2: "eip155:8453" (Base, default when empty) or "eip155:84532" (Base Sepolia)
	FacilitatorURL    string       // base URL of the facilitator (its /verify, /settle, /supported); required
	MaxTimeoutSeconds int          // authorization window offered to clients; 0 means 60
	HTTPClient        *http.Client // nil means a client with sane timeouts
	Description       string       // resource description in the challenge (optional)
}

// Validate reports the first misconfiguration with a clear message.
func (c Config) Validate() error { return errors.New("x402: not implemented yet") }

// Paywall runs the x402 v2 exact-scheme flow for one route, $0.002 USDC per settled request.
type Paywall struct{ cfg Config }

// New validates cfg and returns a Paywall. It does no I/O.
func New(cfg Config) (*Paywall, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Paywall{cfg: cfg}, nil
}

// Handle runs the flow for a request whose body the caller has already decoded and validated.
func (p *Paywall) Handle(w http.ResponseWriter, r *http.Request, resourceURL string, produce func() (status int, body []byte)) {
	http.Error(w, "payment not implemented yet", http.StatusServiceUnavailable)
}
