package tools

import (
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight"
)

// TestApprovalAboveUSDStrict: each aboveUsd that is not a plain
// non-negative decimal up to 1e9 is refused, at /aboveUsd.
func TestApprovalAboveUSDStrict(t *testing.T) {
	for _, raw := range []string{
		`{"aboveUsd":-1}`, `{"aboveUsd":"-1"}`, `{"aboveUsd":-0.0001}`, `{"aboveUsd":1e400}`, `{"aboveUsd":1000000000.0000001}`, `{"aboveUsd":99999999999999999999999999}`, `{"aboveUsd":"0x10"}`,
		`{"aboveUsd":" 1"}`, `{"aboveUsd":"1 "}`, `{"aboveUsd":"1."}`, `{"aboveUsd":".5"}`, `{"aboveUsd":"+1"}`, `{"aboveUsd":"NaN"}`,
		`{"aboveUsd":"Infinity"}`, `{"aboveUsd":"1_000"}`, `{"aboveUsd":"\u0661"}`, `{"aboveUsd":""}`, `{"aboveUsd":null}`,
		`{"aboveUsd":true}`, `{"aboveUsd":[1]}`, `{"aboveUsd":{}}`, `{"aboveUsd":"01"}`, `{"aboveUsd":"1,5"}`, `{"aboveUsd":"$1"}`,
		`{"aboveUsd":"1\u0000"}`, `{}`, `{"aboveUsd":1,"x":1}`, `{"AboveUsd":1}`, `"Always"`, `"always "`, `""`, `null`, `1`, `[]`,
	} {
		if a, is := decodeApproval("/x/approval", json.RawMessage(raw)); is == nil {
			t.Errorf("%s: decoded as %+v, want an issue", raw, a)
		}
	}
	for raw, want := range map[string]string{`{"aboveUsd":0}`: "0", `{"aboveUsd":"0.50"}`: "0.50", `{"aboveUsd":1000000000}`: "1000000000",
		// Exponents are JSON numbers, as priceUsd takes them; they compare exactly (see below).
		`{"aboveUsd":1E-2}`: "1E-2", `{"aboveUsd":"1e2"}`: "1e2", `{"aboveUsd":-0}`: "-0"} {
		a, is := decodeApproval("/x/approval", json.RawMessage(raw))
		if is != nil || a.When != ApprovalAboveUSD || string(a.AboveUSD) != want {
			t.Errorf("%s: %+v, %v; want aboveUsd %s", raw, a, is, want)
		}
	}
}

// TestConsentAboveUSDExact: an aboveUsd written with an exponent, or with
// more digits than a double holds, compares with the price exactly.
func TestConsentAboveUSDExact(t *testing.T) {
	for _, tc := range []struct {
		above, price string
		needed       bool
	}{
		{"1E-2", "0.5", true}, {"1e2", "50", false}, {"1e2", "100.000000000000000001", true},
		{"0.10000000000000000001", "0.1", false}, {"0.1", "0.10000000000000000001", true}, {"-0", "0", false},
	} {
		set, err := NewSet(Spec{}, Spec{Operation: preflight.Operation{Provider: "mcp", Name: "buy"}, PriceUSD: json.Number(tc.price),
			Approval: Approval{When: ApprovalAboveUSD, AboveUSD: json.Number(tc.above)}})
		if err != nil {
			t.Fatalf("above %s, price %s: %v", tc.above, tc.price, err)
		}
		if c := set.Consent("buy", json.RawMessage(`{}`)); c.Needed != tc.needed {
			t.Errorf("above %s, price %s: %+v, want needed %v", tc.above, tc.price, c, tc.needed)
		}
	}
}
