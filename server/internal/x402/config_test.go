package x402

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	ok := Config{PayTo: testPayTo, FacilitatorURL: "https://x402.example/facilitator"}
	tests := []struct {
		name string
		mut  func(*Config)
		want string // "" means valid
	}{
		{"minimal config is valid", func(*Config) {}, ""},
		{"zero config", func(c *Config) { *c = Config{} }, "x402: PayTo is empty: want the recipient address, 0x followed by 40 hex digits"},
		{"EIP-55 checksummed payTo", func(c *Config) { c.PayTo = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" }, ""},
		{"upper-case payTo", func(c *Config) { c.PayTo = "0x" + strings.ToUpper(testPayTo[2:]) }, ""},
		{"bad checksum", func(c *Config) { c.PayTo = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD" },
			"x402: PayTo has mixed case but is not a valid EIP-55 checksum: want 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed (check for a typo)"},
		{"no 0x", func(c *Config) { c.PayTo = testPayTo[2:] + "00" }, "x402: PayTo is not an address: want 0x followed by 40 hex digits"},
		{"too short", func(c *Config) { c.PayTo = testPayTo[:41] }, "x402: PayTo is not an address: want 0x followed by 40 hex digits"},
		{"not hex", func(c *Config) { c.PayTo = "0x" + strings.Repeat("g", 40) }, "x402: PayTo is not an address: want 0x followed by 40 hex digits"},
		{"zero address", func(c *Config) { c.PayTo = "0x" + strings.Repeat("0", 40) }, "x402: PayTo is the zero address: payments to it are burned"},
		{"Base Sepolia", func(c *Config) { c.Network = "eip155:84532" }, ""},
		{"unknown network", func(c *Config) { c.Network = "eip155:1" },
			`x402: Network "eip155:1" is not supported: want "eip155:8453" (Base) or "eip155:84532" (Base Sepolia)`},
		{"no facilitator", func(c *Config) { c.FacilitatorURL = "" },
			"x402: FacilitatorURL is empty: want the facilitator's base URL, e.g. https://facilitator.example/"},
		{"relative facilitator", func(c *Config) { c.FacilitatorURL = "/facilitator" }, "x402: FacilitatorURL is not an absolute http(s) URL with a host"},
		{"ftp facilitator", func(c *Config) { c.FacilitatorURL = "ftp://x402.example" }, "x402: FacilitatorURL is not an absolute http(s) URL with a host"},
		{"http to a remote host", func(c *Config) { c.FacilitatorURL = "http://x402.example" },
			"x402: FacilitatorURL uses http to a non-loopback host: want https (payment payloads are signed authorizations)"},
		{"http to loopback", func(c *Config) { c.FacilitatorURL = "http://127.0.0.1:4021" }, ""},
		{"http to localhost", func(c *Config) { c.FacilitatorURL = "http://localhost:4021/x402" }, ""},
		{"http to ::1", func(c *Config) { c.FacilitatorURL = "http://[::1]:4021" }, ""},
		{"query in facilitator URL", func(c *Config) { c.FacilitatorURL = "https://x402.example/?key=1" },
			"x402: FacilitatorURL must not carry a query, fragment or user info"},
		{"negative window", func(c *Config) { c.MaxTimeoutSeconds = -1 },
			"x402: MaxTimeoutSeconds -1 is out of range: want 0 (meaning 60) up to 3600"},
		{"window too long", func(c *Config) { c.MaxTimeoutSeconds = 3601 },
			"x402: MaxTimeoutSeconds 3601 is out of range: want 0 (meaning 60) up to 3600"},
		{"window too short for the default timeouts", func(c *Config) { c.MaxTimeoutSeconds = 30 },
			"x402: MaxTimeoutSeconds 30 is too short: it must be at least 35s (VerifyTimeout + SettleTimeout + 10s) so a payment cannot expire while it is processed"},
		{"short window with short timeouts", func(c *Config) {
			c.MaxTimeoutSeconds = 20
			c.VerifyTimeout = 3 * time.Second
			c.SettleTimeout = 5 * time.Second
		}, ""},
		{"negative timeout", func(c *Config) { c.SettleTimeout = -time.Second },
			"x402: VerifyTimeout and SettleTimeout must not be negative (0 means the default)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mut(&c)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
			p, err := New(c)
			if (p == nil) != (tc.want != "") || (err == nil) != (tc.want == "") {
				t.Errorf("New() = %v, %v; want a Paywall exactly when the config is valid", p, err)
			}
		})
	}
}

// TestChecksumAddress uses the examples of EIP-55 and the USDC contracts.
func TestChecksumAddress(t *testing.T) {
	for _, want := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
		"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
		"0x036CbD53842c5426634e7929541eC2318f3dCF7e",
	} {
		if got := checksumAddress(strings.ToLower(want)); got != want {
			t.Errorf("checksumAddress(%s) = %s, want %s", strings.ToLower(want), got, want)
		}
	}
}
