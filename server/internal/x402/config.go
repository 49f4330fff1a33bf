package x402

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/crypto/sha3"
)

// Price of one settled request: $0.002 in USDC atomic units (6 decimals).
const (
	PriceUSD    = "0.002"
	PriceAmount = "2000"
)

// Networks this package can charge on.
const (
	NetworkBase        = "eip155:8453"  // Base mainnet, the default
	NetworkBaseSepolia = "eip155:84532" // Base Sepolia testnet
)

// Defaults of the zero [Config] fields.
const (
	DefaultMaxTimeoutSeconds = 60
	DefaultVerifyTimeout     = 10 * time.Second
	DefaultSettleTimeout     = 15 * time.Second
	// DefaultMaxFacilitatorCalls bounds the payments being verified or
	// settled at once. An honest payment holds a call for a second or
	// two, so 32 is a few dozen paid answers a second; a flood of junk
	// payments (right shape, fake signature) costs the operator at most 32
	// facilitator calls at a time and 32 outbound sockets.
	DefaultMaxFacilitatorCalls = 32
)

// usdc is the USDC contract and EIP-712 domain of one network. The name
// differs: "USD Coin" on Base mainnet, "USDC" on Base Sepolia.
type usdc struct {
	asset, name, version string
}

var usdcByNetwork = map[string]usdc{
	NetworkBase:        {"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USD Coin", "2"},
	NetworkBaseSepolia: {"0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC", "2"},
}

// Config configures payment for one route. The zero value is invalid (no
// recipient). A Config is read once by [New]; changing it afterwards has no
// effect on the Paywall.
type Config struct {
	// PayTo is the recipient address: 0x + 40 hex digits; a mixed-case
	// address must be a valid EIP-55 checksum. The zero address is refused.
	PayTo string
	// Network is the CAIP-2 chain: "eip155:8453" (Base, the default when
	// empty) or "eip155:84532" (Base Sepolia).
	Network string
	// FacilitatorURL is the base URL of the facilitator; its /verify,
	// /settle and /supported endpoints hang below it. Required: https, or
	// http to a loopback host only (payloads are signed authorizations).
	FacilitatorURL string
	// MaxTimeoutSeconds is the authorization window offered to clients; 0
	// means 60. It must leave room for verification, settlement and the
	// facilitator's 6-second margin: at least VerifyTimeout + SettleTimeout
	// + 10 s, and at most 3600.
	MaxTimeoutSeconds int
	// HTTPClient calls the facilitator; nil means a client with a 30 s
	// overall timeout that never follows redirects.
	HTTPClient *http.Client
	// Description is the resource description in the challenge (optional).
	Description string

	// VerifyTimeout bounds one /verify call; 0 means 10 s.
	VerifyTimeout time.Duration
	// SettleTimeout bounds one /settle call; 0 means 15 s.
	SettleTimeout time.Duration
	// MaxFacilitatorCalls bounds the payments with the facilitator at once,
	// from /verify through /settle (a verified payment keeps its place, so
	// its settlement never waits); 0 means [DefaultMaxFacilitatorCalls]. A
	// payment beyond it is answered 503 server_busy with Retry-After before
	// any call: junk payments cannot spend the facilitator's quota faster
	// than this many at a time.
	MaxFacilitatorCalls int
	// Logger receives one line per facilitator failure, never with header
	// values, signatures or payloads; nil means no logging. Lines are logged
	// with the request's context, so a handler can add a request id.
	Logger *slog.Logger
	// Observe, when non-nil, is called with the request's context at every
	// payment step (see [Outcome]), for metrics and traces. It must be safe
	// for concurrent use and return quickly.
	Observe func(ctx context.Context, o Outcome)
}

// Validate reports the first misconfiguration with a clear message. It does
// no I/O.
func (c Config) Validate() error {
	if err := validateAddress(c.PayTo); err != nil {
		return err
	}
	if _, ok := usdcByNetwork[c.network()]; !ok {
		return fmt.Errorf("x402: Network %q is not supported: want %q (Base) or %q (Base Sepolia)", c.Network, NetworkBase, NetworkBaseSepolia)
	}
	if err := validateFacilitatorURL(c.FacilitatorURL); err != nil {
		return err
	}
	if c.MaxFacilitatorCalls < 0 {
		return errors.New("x402: MaxFacilitatorCalls must not be negative (0 means the default)")
	}
	if c.VerifyTimeout < 0 || c.SettleTimeout < 0 {
		return errors.New("x402: VerifyTimeout and SettleTimeout must not be negative (0 means the default)")
	}
	w := c.maxTimeout()
	need := c.verifyTimeout() + c.settleTimeout() + 10*time.Second
	if w < 0 || w > 3600 {
		return fmt.Errorf("x402: MaxTimeoutSeconds %d is out of range: want 0 (meaning %d) up to 3600", c.MaxTimeoutSeconds, DefaultMaxTimeoutSeconds)
	}
	if time.Duration(w)*time.Second < need {
		return fmt.Errorf("x402: MaxTimeoutSeconds %d is too short: it must be at least %v (VerifyTimeout + SettleTimeout + 10s) so a payment cannot expire while it is processed", w, need)
	}
	return nil
}

func (c Config) network() string {
	if c.Network == "" {
		return NetworkBase
	}
	return c.Network
}

func (c Config) maxTimeout() int {
	if c.MaxTimeoutSeconds == 0 {
		return DefaultMaxTimeoutSeconds
	}
	return c.MaxTimeoutSeconds
}

func (c Config) maxFacilitatorCalls() int {
	if c.MaxFacilitatorCalls == 0 {
		return DefaultMaxFacilitatorCalls
	}
	return c.MaxFacilitatorCalls
}

func (c Config) verifyTimeout() time.Duration {
	if c.VerifyTimeout == 0 {
		return DefaultVerifyTimeout
	}
	return c.VerifyTimeout
}

func (c Config) settleTimeout() time.Duration {
	if c.SettleTimeout == 0 {
		return DefaultSettleTimeout
	}
	return c.SettleTimeout
}

// requirements builds the single offer for c, which must be valid.
func (c Config) requirements() PaymentRequirements {
	u := usdcByNetwork[c.network()]
	extra, _ := json.Marshal(struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}{u.name, u.version})
	return PaymentRequirements{
		Scheme:            "exact",
		Network:           c.network(),
		Amount:            PriceAmount,
		Asset:             u.asset,
		PayTo:             c.PayTo,
		MaxTimeoutSeconds: c.maxTimeout(),
		Extra:             extra,
	}
}

// validateAddress accepts 0x + 40 hex digits, all lower case, all upper
// case, or a correct EIP-55 mixed-case checksum, except the zero address.
func validateAddress(a string) error {
	if a == "" {
		return errors.New("x402: PayTo is empty: want the recipient address, 0x followed by 40 hex digits")
	}
	if len(a) != 42 || a[:2] != "0x" {
		return errors.New("x402: PayTo is not an address: want 0x followed by 40 hex digits")
	}
	h := a[2:]
	if _, err := hex.DecodeString(h); err != nil {
		return errors.New("x402: PayTo is not an address: want 0x followed by 40 hex digits")
	}
	if strings.Trim(h, "0") == "" {
		return errors.New("x402: PayTo is the zero address: payments to it are burned")
	}
	if h == strings.ToLower(h) || h == strings.ToUpper(h) {
		return nil
	}
	if want := checksumAddress(a); want != a {
		return fmt.Errorf("x402: PayTo has mixed case but is not a valid EIP-55 checksum: want %s (check for a typo)", want)
	}
	return nil
}

// checksumAddress returns the EIP-55 form of a 0x-prefixed 40-hex address.
func checksumAddress(a string) string {
	lower := strings.ToLower(a[2:])
	k := sha3.NewLegacyKeccak256()
	k.Write([]byte(lower))
	sum := k.Sum(nil)
	out := []byte("0x" + lower)
	for i := range 40 {
		nib := sum[i/2] >> 4
		if i%2 == 1 {
			nib = sum[i/2] & 0x0f
		}
		if c := out[2+i]; c >= 'a' && nib >= 8 {
			out[2+i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

func validateFacilitatorURL(s string) error {
	if s == "" {
		return errors.New("x402: FacilitatorURL is empty: want the facilitator's base URL, e.g. https://facilitator.example/")
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("x402: FacilitatorURL is not an absolute http(s) URL with a host")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return errors.New("x402: FacilitatorURL must not carry a query, fragment or user info")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return errors.New("x402: FacilitatorURL uses http to a non-loopback host: want https (payment payloads are signed authorizations)")
		}
	default:
		return errors.New("x402: FacilitatorURL is not an absolute http(s) URL with a host")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
