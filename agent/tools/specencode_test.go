package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

// TestEncodeSpecsRoundTrip: a set's specs written by EncodeSpecs read
// back with DecodeSpecFile into the same specs and a catalog of exactly
// the set's operations, which decides a call as the set's catalog does.
func TestEncodeSpecsRoundTrip(t *testing.T) {
	yes, no := true, false
	set, err := NewSet(Spec{},
		Spec{Operation: preflight.Operation{Provider: "mcp", Name: "market_quote", Aliases: []string{"quote"},
			Schema:      json.RawMessage(`{"type":"object","required":["symbol"],"properties":{"symbol":{"type":"string","format":"email"}}}`),
			Annotations: &preflight.ToolAnnotations{ReadOnlyHint: &yes}, AssertFormat: true},
			PriceUSD: "0.002", TTLSeconds: "60", RetryCap: "2", IdempotencySeconds: "0"},
		Spec{Operation: preflight.Operation{Provider: "mcp", Name: "delete_file", Effects: preflight.EffectsDestructive},
			Approval: Approval{When: ApprovalDestructive}},
		Spec{Operation: preflight.Operation{Provider: "mail", Name: "send", Annotations: &preflight.ToolAnnotations{DestructiveHint: &no}},
			PriceUSD: "1.5", Approval: Approval{When: ApprovalAboveUSD, AboveUSD: "1"}},
		Spec{Operation: preflight.Operation{Provider: "mcp", Name: "ask"}, Approval: Approval{When: ApprovalAlways}},
	)
	if err != nil {
		t.Fatal(err)
	}
	file, err := EncodeSpecs(set.Specs())
	if err != nil {
		t.Fatal(err)
	}
	catalog, specs, err := DecodeSpecFile(file)
	if err != nil {
		t.Fatalf("%v\n%s", err, file)
	}
	if diff := cmp.Diff(set.Specs(), specs); diff != "" {
		t.Errorf("specs read back (-written +read):\n%s\nfile: %s", diff, file)
	}
	if diff := cmp.Diff(set.Catalog().Operations(), catalog.Operations()); diff != "" {
		t.Errorf("catalog read back (-set's +file's):\n%s", diff)
	}
	for _, args := range []string{`{"symbol":"a@example.com"}`, `{"symbol":"ACME"}`, `{}`} {
		req := set.Proposal("quote", json.RawMessage(args))
		req.RunID, req.StepID, req.Budget.RemainingUSD = "r", "s", "10"
		want, err1 := set.Catalog().Decide(&req)
		got, err2 := catalog.Decide(&req)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: decision (-set's +file's):\n%s", args, diff)
		}
	}
}

func TestEncodeSpecsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"url members", Spec{Operation: preflight.Operation{Provider: "p", Name: "browse", URLMembers: []string{"url"}}}, "URLMembers"},
		{"schema not JSON", Spec{Operation: preflight.Operation{Provider: "p", Name: "n", Schema: json.RawMessage(`{`)}}, "not JSON"},
		{"approval rule", Spec{Operation: preflight.Operation{Provider: "p", Name: "n"}, Approval: Approval{When: 9}}, "approval rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := EncodeSpecs([]Spec{tc.spec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func ExampleEncodeSpecs() {
	set, _ := NewSet(Spec{}, Spec{
		Operation: preflight.Operation{Provider: "mcp", Name: "market_quote", Effects: preflight.EffectsReadOnly},
		PriceUSD:  "0.002",
		Approval:  Approval{When: ApprovalAboveUSD, AboveUSD: "1"},
	})
	file, _ := EncodeSpecs(set.Specs())
	fmt.Println(string(file))
	// Output:
	// {"builtins":false,"operations":[{"provider":"mcp","name":"market_quote","effects":"read_only","priceUsd":0.002,"approval":{"aboveUsd":"1"}}]}
}
