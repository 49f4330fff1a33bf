package auth

import (
	"strings"
	"testing"
)

const testKey = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// TestPolicyUnknownMembers checks that every member the format lacks is
// named by its JSON Pointer, at every level.
func TestPolicyUnknownMembers(t *testing.T) {
	_, err := Parse([]byte(`{"principals":{"a/b":{"keySha256":["` + testKey + `"],"polcy":{},
  "policy":{"extra":1,"operations":[{"name":"q","price":1}]}}},"jwt2":{}}`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"/jwt2: unknown member", "/principals/a~1b/polcy: unknown member",
		"/principals/a~1b/policy/extra: unknown member", "/principals/a~1b/policy/operations/0/price: unknown member"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestPolicyProblems checks that each bad value of a policy is named.
func TestPolicyProblems(t *testing.T) {
	_, err := Parse([]byte(`{"principals":{"a":{"keySha256":["` + testKey + `"],
  "policy":{"budgetUsd":-1,"budgetUsdPerRun":-0.5,"maxCallsPerRun":-2,"tools":["t","t"],
    "operations":[{"name":"q"},{"name":"r","ttlSeconds":1.5}]}}}}`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"/principals/a/policy/budgetUsdPerRun", "/principals/a/policy/budgetUsd -1",
		"/principals/a/policy/budgetUsd needs a window", "/principals/a/policy/maxCallsPerRun -2",
		"/principals/a/policy/tools/1", "/principals/a/policy/operations/0: give priceUsd",
		"/principals/a/policy/operations/1/ttlSeconds 1.5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	f, err := Parse([]byte(`{"principals":{"a":{"keySha256":["` + testKey + `"],
  "policy":{"budgetUsd":5,"window":"24h","tools":["t"],"operations":[{"name":"t","priceUsd":0.5}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := f.PolicyOf("a")
	if p.WindowDuration().Hours() != 24 || !p.Allows("t") || p.Allows("u") || f.PolicyOf("b") != nil || !f.PolicyOf("b").Allows("u") {
		t.Errorf("policy read as %+v", p)
	}
}
