package tools

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

func TestDecodeApproval(t *testing.T) {
	file := func(approval string) []byte {
		return []byte(`{"builtins":false,"operations":[{"provider":"mcp","name":"rm","priceUsd":0.25,"approval":` + approval + `}]}`)
	}
	for _, tc := range []struct {
		approval string
		want     Approval
	}{
		{`"always"`, Approval{When: ApprovalAlways}},
		{`"destructive"`, Approval{When: ApprovalDestructive}},
		{`{"aboveUsd":0.10}`, Approval{When: ApprovalAboveUSD, AboveUSD: "0.10"}},
		{`{"aboveUsd":"0.10"}`, Approval{When: ApprovalAboveUSD, AboveUSD: "0.10"}},
		{`{"aboveUsd":"1e3"}`, Approval{When: ApprovalAboveUSD, AboveUSD: "1e3"}},
		{`{"aboveUsd":0}`, Approval{When: ApprovalAboveUSD, AboveUSD: "0"}},
	} {
		specs, err := DecodeSpecs(file(tc.approval))
		if err != nil {
			t.Errorf("%s: %v", tc.approval, err)
			continue
		}
		if d := cmp.Diff(tc.want, specs[0].Approval); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.approval, d)
		}
	}
	for _, tc := range []struct {
		approval string
		want     preflight.Issue
	}{
		{`"sometimes"`, preflight.Issue{Path: "/operations/0/approval", Code: preflight.IssueEnum,
			Message: `expected one of "always", "destructive" or {"aboveUsd": AMOUNT}, found "sometimes"`}},
		{`true`, preflight.Issue{Path: "/operations/0/approval", Code: preflight.IssueType,
			Message: `expected "always", "destructive" or {"aboveUsd": AMOUNT}, found true`}},
		{`{}`, preflight.Issue{Path: "/operations/0/approval/aboveUsd", Code: preflight.IssueRequired,
			Message: `missing member "aboveUsd": the estimated cost in dollars above which a call asks`}},
		{`{"aboveUsd":1,"below":2}`, preflight.Issue{Path: "/operations/0/approval/below", Code: preflight.IssueUnknownField,
			Message: `unknown member "below"; expected "aboveUsd"`}},
		{`{"aboveUsd":-1}`, preflight.Issue{Path: "/operations/0/approval/aboveUsd", Code: preflight.IssueMinimum,
			Message: `expected a non-negative decimal of dollars no greater than 1000000000 (such as 0.50), found "-1"`}},
		{`{"aboveUsd":"2e9"}`, preflight.Issue{Path: "/operations/0/approval/aboveUsd", Code: preflight.IssueMaximum,
			Message: `expected a non-negative decimal of dollars no greater than 1000000000 (such as 0.50), found "2e9"`}},
		{`{"aboveUsd":"ten"}`, preflight.Issue{Path: "/operations/0/approval/aboveUsd", Code: preflight.IssueType,
			Message: `expected a non-negative decimal of dollars no greater than 1000000000 (such as 0.50), found "ten"`}},
		{`{"aboveUsd":".5"}`, preflight.Issue{Path: "/operations/0/approval/aboveUsd", Code: preflight.IssueType,
			Message: `expected a non-negative decimal of dollars no greater than 1000000000 (such as 0.50), found ".5"`}},
		{`{"aboveUsd":null}`, preflight.Issue{Path: "/operations/0/approval/aboveUsd", Code: preflight.IssueType,
			Message: `expected a decimal number of dollars (a JSON number or a string holding one), found null`}},
	} {
		_, err := DecodeSpecs(file(tc.approval))
		var pe *preflight.Error
		if !errors.As(err, &pe) || pe.Code != preflight.ErrorInvalidRequest {
			t.Errorf("%s: %v, want an invalid_request error", tc.approval, err)
			continue
		}
		if d := cmp.Diff([]preflight.Issue{tc.want}, pe.Details); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.approval, d)
		}
	}
	// A member twice is the catalog decoder's duplicate_key.
	_, err := DecodeSpecs([]byte(`{"operations":[{"provider":"mcp","name":"rm","approval":"always","approval":"destructive"}]}`))
	var pe *preflight.Error
	if !errors.As(err, &pe) || len(pe.Details) != 1 || pe.Details[0].Code != preflight.IssueDuplicateKey {
		t.Errorf("approval twice: %v, want one duplicate_key issue", err)
	}
}

func TestNewSetApproval(t *testing.T) {
	bad := Spec{Operation: preflight.Operation{Provider: "mcp", Name: "x"}, Approval: Approval{When: ApprovalAboveUSD, AboveUSD: "-0.5"}}
	_, err := NewSet(Spec{}, bad)
	var pe *preflight.Error
	if !errors.As(err, &pe) || len(pe.Details) != 1 || pe.Details[0].Path != "/0/approval/aboveUsd" {
		t.Fatalf("negative AboveUSD: %v, want one issue at /0/approval/aboveUsd", err)
	}
	_, err = NewSet(Spec{Approval: Approval{When: ApprovalAlways, AboveUSD: "1"}})
	if !errors.As(err, &pe) || len(pe.Details) != 1 || pe.Details[0].Path != "/unknown/approval/aboveUsd" {
		t.Fatalf("AboveUSD with ApprovalAlways: %v, want one issue at /unknown/approval/aboveUsd", err)
	}
}

func TestConsent(t *testing.T) {
	yes, no := true, false
	specs := []Spec{
		{Operation: preflight.Operation{Provider: "mcp", Name: "always"}, Approval: Approval{When: ApprovalAlways}},
		{Operation: preflight.Operation{Provider: "mcp", Name: "hinted", Annotations: &preflight.ToolAnnotations{DestructiveHint: &yes}},
			Approval: Approval{When: ApprovalDestructive}},
		{Operation: preflight.Operation{Provider: "mcp", Name: "unannotated", Annotations: &preflight.ToolAnnotations{}},
			Approval: Approval{When: ApprovalDestructive}}, // MCP's defaults: destructive
		{Operation: preflight.Operation{Provider: "mcp", Name: "additive", Annotations: &preflight.ToolAnnotations{DestructiveHint: &no}},
			Approval: Approval{When: ApprovalDestructive}},
		{Operation: preflight.Operation{Provider: "mcp", Name: "marked", Effects: preflight.EffectsDestructive,
			Annotations: &preflight.ToolAnnotations{DestructiveHint: &no}}, Approval: Approval{When: ApprovalDestructive}}, // the catalog's own marking wins
		{Operation: preflight.Operation{Provider: "mcp", Name: "reader", Annotations: &preflight.ToolAnnotations{ReadOnlyHint: &yes}},
			Approval: Approval{When: ApprovalDestructive}},
		{Operation: preflight.Operation{Provider: "mcp", Name: "dear"}, PriceUSD: "0.1000000000000000000001",
			Approval: Approval{When: ApprovalAboveUSD, AboveUSD: "0.1"}},
		{Operation: preflight.Operation{Provider: "mcp", Name: "even"}, PriceUSD: "0.10",
			Approval: Approval{When: ApprovalAboveUSD, AboveUSD: "0.1"}},
		{Operation: preflight.Operation{Provider: "mcp", Name: "free"}},
	}
	set, err := NewSet(Spec{Approval: Approval{When: ApprovalDestructive}}, specs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"always", true}, {"hinted", true}, {"unannotated", true}, {"additive", false}, {"marked", true},
		{"reader", false}, {"dear", true}, {"even", false}, {"free", false}, {"not-listed", true},
	} {
		c := set.Consent(tc.name, json.RawMessage(`{"a":1}`))
		if c.Needed != tc.want || (c.Reason != "") != tc.want {
			t.Errorf("%s: %+v, want Needed %v with a reason exactly when needed", tc.name, c, tc.want)
		}
	}
	if c := set.Consent("dear", nil); c.EstimatedCostUSD != "0.1000000000000000000001" {
		t.Errorf("estimated cost %q, want the price exactly", c.EstimatedCostUSD)
	}
	if c := set.Consent("free", nil); c.EstimatedCostUSD != "0" {
		t.Errorf("estimated cost of a free tool %q, want 0", c.EstimatedCostUSD)
	}
}

// BenchmarkConsent is the cost Set.Consent adds to every guarded call: of
// a tool without an approval policy, and of one whose policy compares the
// price.
func BenchmarkConsent(b *testing.B) {
	set, err := NewSet(Spec{}, Spec{Operation: preflight.Operation{Provider: "mcp", Name: "plain"}, PriceUSD: "0.25"},
		Spec{Operation: preflight.Operation{Provider: "mcp", Name: "dear"}, PriceUSD: "0.25", Approval: Approval{When: ApprovalAboveUSD, AboveUSD: "0.10"}})
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"q":"x"}`)
	for _, name := range []string{"plain", "dear"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				set.Consent(name, args)
			}
		})
	}
}
