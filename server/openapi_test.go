package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOpenAPIMatchesRoutes: every route the handler serves is in the
// document with the same methods, and the document lists nothing else.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	h := New(testConfig).(*observer).next.(*handler)
	served := map[string][]string{}
	for path, rt := range h.routes {
		var methods []string
		if rt.anyMethod != nil {
			methods = []string{"delete", "get", "post"} // the MCP transport: POST, and 405 documented for GET and DELETE
		}
		for m := range rt.methods {
			if m != "HEAD" {
				methods = append(methods, strings.ToLower(m))
			}
		}
		slices.Sort(methods)
		served[path] = methods
	}
	documented := map[string][]string{}
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		var methods []string
		for m := range item.GetOperations().FromOldest() {
			methods = append(methods, m)
		}
		slices.Sort(methods)
		documented[path] = methods
	}
	if diff := cmp.Diff(served, documented); diff != "" {
		t.Errorf("routes (-served +documented):\n%s", diff)
	}
}

// TestOpenAPIContract checks the points of the specification the document
// must state.
func TestOpenAPIContract(t *testing.T) {
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			XPayment  map[string]any `json:"x-payment"`
			Responses map[string]struct {
				Headers map[string]struct {
					Required bool `json:"required"`
				} `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				AdditionalProperties *bool `json:"additionalProperties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "0.3.0" {
		t.Errorf("openapi %q version %q, want 3.1.0 and 0.3.0", doc.OpenAPI, doc.Info.Version)
	}
	paid := doc.Paths["/v0.2/preflight/tool-call"]["post"]
	if diff := cmp.Diff(map[string]any{
		"protocol": "x402", "x402Version": 2.0, "scheme": "exact", "network": "eip155:8453",
		"asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "assetName": "USDC", "amount": "2000", "priceUsd": "0.002",
		"appliesWhen": "the deployment has a payment recipient configured; otherwise the route is unpaid",
	}, paid.XPayment); diff != "" {
		t.Errorf("x-payment (-want +got):\n%s", diff)
	}
	if !paid.Responses["402"].Headers["PAYMENT-REQUIRED"].Required {
		t.Error("402 does not require PAYMENT-REQUIRED")
	}
	for _, status := range []string{"200", "402", "503"} {
		if _, ok := paid.Responses[status].Headers["PAYMENT-RESPONSE"]; !ok {
			t.Errorf("%s lacks PAYMENT-RESPONSE", status)
		}
	}
	// additionalProperties false wherever the specification says so. The
	// tool-call request's top level is the exception: unknown members
	// there are ignored, not rejected.
	for _, name := range []string{"Issue", "ErrorEnvelope", "CheckRequest", "ProposedRequest", "CheckEconomics", "CheckResult", "EconomicsResult",
		"ToolCall", "Budget", "HistoryEntry", "ToolCallDecision", "Estimate", "Recommendation", "Health"} {
		ap := doc.Components.Schemas[name].AdditionalProperties
		if ap == nil || *ap {
			t.Errorf("schema %s: additionalProperties is not false", name)
		}
	}
	if ap := doc.Components.Schemas["ToolCallRequest"].AdditionalProperties; ap != nil && !*ap {
		t.Error("ToolCallRequest must allow (and ignore) unknown top-level members")
	}
}
