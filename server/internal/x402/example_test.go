package x402_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/agentpreflight/preflight/server/internal/x402"
)

// A route handler decodes and validates the body first (a bad body gets a
// free 400), then hands the request to the paywall. Without a
// PAYMENT-SIGNATURE header the client gets the challenge; no facilitator is
// called.
func ExamplePaywall_Handle() {
	pw, err := x402.New(x402.Config{
		PayTo:          "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		FacilitatorURL: "https://facilitator.example",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	route := "https://api.example/v0.2/preflight/tool-call"
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, route, nil)
	pw.Handle(rec, req, route, func() (int, []byte) {
		return http.StatusOK, []byte(`{"decision":"allow"}`) // runs only after verification
	})

	var challenge x402.PaymentRequired
	if err := x402.DecodeHeader(rec.Header().Get("PAYMENT-REQUIRED"), &challenge); err != nil {
		fmt.Println(err)
		return
	}
	offer := challenge.Accepts[0]
	fmt.Println(rec.Code, challenge.X402Version, challenge.Resource.URL)
	fmt.Println(offer.Scheme, offer.Network, offer.Amount, offer.Asset, string(offer.Extra))
	// Output:
	// 402 2 https://api.example/v0.2/preflight/tool-call
	// exact eip155:8453 2000 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913 {"name":"USD Coin","version":"2"}
}

// A bad configuration is refused before any request is served.
func ExampleConfig_Validate() {
	err := x402.Config{
		PayTo:          "0x209693bc6afc0c5328ba36faf03c514ef312287C",
		FacilitatorURL: "https://facilitator.example",
	}.Validate()
	fmt.Println(err)
	// Output:
	// x402: PayTo has mixed case but is not a valid EIP-55 checksum: want 0x209693Bc6afc0C5328bA36FaF03C514EF312287C (check for a typo)
}
