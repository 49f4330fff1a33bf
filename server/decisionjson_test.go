package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

// checkDecisionJSON fails unless appendDecisionJSON and json.Marshal agree
// on d: the same bytes, or both an error with the same text.
func checkDecisionJSON(t *testing.T, d *preflight.ToolCallDecision) {
	t.Helper()
	want, wantErr := json.Marshal(d)
	got, gotErr := appendDecisionJSON([]byte("prefix"), d)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("Marshal error %v, appendDecisionJSON error %v", wantErr, gotErr)
	}
	if wantErr != nil {
		if wantErr.Error() != gotErr.Error() {
			t.Fatalf("error %q, Marshal's %q", gotErr, wantErr)
		}
		return
	}
	if diff := cmp.Diff(string(want), strings.TrimPrefix(string(got), "prefix")); diff != "" || !strings.HasPrefix(string(got), "prefix") {
		t.Fatalf("appendDecisionJSON differs from json.Marshal (-Marshal +ours):\n%s", diff)
	}
}

func TestDecisionJSONMatchesMarshal(t *testing.T) {
	small, err := preflight.DecideJSON([]byte(toolAllow))
	if err != nil {
		t.Fatal(err)
	}
	reuse, err := preflight.DecideJSON([]byte(fmt.Sprintf(toolReuseTemplate, small.RequestFingerprint)))
	if err != nil {
		t.Fatal(err)
	}
	invalid, err := preflight.DecideJSON([]byte(`{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"q<\u0001>":"x","max_results":"five"},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	full := preflight.ToolCallDecision{
		Verdict:            "allow",
		Enforcement:        "execute",
		ReasonCodes:        []preflight.ReasonCode{"A", "B<&>"},
		RequestFingerprint: "f\x00\x01\b\f\n\r\t\x1f\x7f\"\\/",
		MatchedCallID:      "m\xff\xfe\u2029é😀",
		Issues:             []preflight.Issue{{Path: "/a/0", Code: "c", Message: "m"}, {}},
		Estimated: preflight.Estimate{PreflightCostUSD: "0.002", PriceChargedUSD: "-0", AvoidableExternalCostUSD: "1e-7",
			AvoidableModelCostUSD: "12.5E+3", NetSavingsUSD: "-0.25", Billable: true, Confidence: "1"},
		Recommendation: &preflight.Recommendation{Action: "reuse_result", ResultReference: "r"},
	}
	cases := map[string]*preflight.ToolCallDecision{
		"small allow":                      small,
		"reuse with a matched call":        reuse,
		"issues":                           invalid,
		"every member, awkward strings":    &full,
		"zero value (nil slices, numbers)": {},
		"empty slices, empty recommendation": {
			ReasonCodes: []preflight.ReasonCode{}, Issues: []preflight.Issue{}, Recommendation: &preflight.Recommendation{},
		},
	}
	for _, n := range []string{"01", "1.", ".5", "+1", "1e", "1e+", "--1", "0x10", "NaN", " 1", "1 "} {
		d := full
		d.Estimated.Confidence = json.Number(n)
		cases["invalid number "+n] = &d
	}
	if reuse.MatchedCallID == "" || len(invalid.Issues) == 0 {
		t.Fatalf("the fixtures no longer cover a matched call (%q) and issues (%d)", reuse.MatchedCallID, len(invalid.Issues))
	}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) { checkDecisionJSON(t, d) })
	}
}

// TestDecisionJSONFields fails when a type of the answer changes its
// members: appendDecisionJSON writes them by hand and must change with it.
func TestDecisionJSONFields(t *testing.T) {
	members := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			out = append(out, f.Name+" "+f.Type.String()+" "+string(f.Tag))
		}
		return out
	}
	want := map[string][]string{
		"ToolCallDecision": {
			`Verdict preflight.Verdict json:"decision"`,
			`Enforcement preflight.Enforcement json:"enforcement"`,
			`ReasonCodes []preflight.ReasonCode json:"reasonCodes"`,
			`RequestFingerprint string json:"requestFingerprint"`,
			`MatchedCallID string json:"matchedCallId,omitempty"`,
			`Issues []preflight.Issue json:"issues"`,
			`Estimated preflight.Estimate json:"estimated"`,
			`Recommendation *preflight.Recommendation json:"recommendation,omitempty"`,
		},
		"Estimate": {
			`PreflightCostUSD json.Number json:"preflightCostUsd"`,
			`PriceChargedUSD json.Number json:"priceChargedUsd"`,
			`AvoidableExternalCostUSD json.Number json:"avoidableExternalCostUsd"`,
			`AvoidableModelCostUSD json.Number json:"avoidableModelCostUsd"`,
			`NetSavingsUSD json.Number json:"netSavingsUsd"`,
			`Billable bool json:"billable"`,
			`Confidence json.Number json:"confidence"`,
		},
		"Issue": {
			`Path string json:"path"`,
			`Code preflight.IssueCode json:"code"`,
			`Message string json:"message"`,
		},
		"Recommendation": {
			`Action preflight.RecommendedAction json:"action"`,
			`ResultReference string json:"resultReference,omitempty"`,
		},
	}
	got := map[string][]string{
		"ToolCallDecision": members(preflight.ToolCallDecision{}),
		"Estimate":         members(preflight.Estimate{}),
		"Issue":            members(preflight.Issue{}),
		"Recommendation":   members(preflight.Recommendation{}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the answer's types changed; change appendDecisionJSON with them (-known +now):\n%s", diff)
	}
	// The string types must stay plain strings: a MarshalJSON or
	// MarshalText method would change what Marshal writes.
	for _, v := range []any{preflight.Verdict(""), preflight.Enforcement(""), preflight.ReasonCode(""), preflight.IssueCode(""), preflight.RecommendedAction("")} {
		if _, ok := v.(json.Marshaler); ok {
			t.Errorf("%T has MarshalJSON", v)
		}
		if _, ok := v.(interface{ MarshalText() ([]byte, error) }); ok {
			t.Errorf("%T has MarshalText", v)
		}
	}
}

// FuzzDecisionJSON holds appendDecisionJSON to json.Marshal on any
// strings and number spellings in any member.
func FuzzDecisionJSON(f *testing.F) {
	f.Add("allow", "execute", "NO_PROVEN_WASTE", "d6ce5e55", "", "/a", "code", "msg", "0.002", "0", "-0.25", "0.5", "reuse_result", "ref", true, 1)
	f.Add("<>&", "\u2028\u2029", "\x00\x1f\x7f", "\xff", "é😀\\\"", "", "", "", "", "01", "1e5", "-", "", "", false, 0)
	f.Fuzz(func(t *testing.T, verdict, enforcement, reason, fp, matched, path, code, msg, n1, n2, n3, n4, action, ref string, billable bool, shape int) {
		d := &preflight.ToolCallDecision{
			Verdict:            preflight.Verdict(verdict),
			Enforcement:        preflight.Enforcement(enforcement),
			RequestFingerprint: fp,
			MatchedCallID:      matched,
			Estimated: preflight.Estimate{PreflightCostUSD: json.Number(n1), PriceChargedUSD: json.Number(n2),
				AvoidableExternalCostUSD: json.Number(n3), AvoidableModelCostUSD: json.Number(n4),
				NetSavingsUSD: json.Number(n2 + n3), Billable: billable, Confidence: json.Number(n4 + n1)},
		}
		if shape&1 != 0 {
			d.ReasonCodes = []preflight.ReasonCode{preflight.ReasonCode(reason), preflight.ReasonCode(action)}
		} else if shape&2 != 0 {
			d.ReasonCodes = []preflight.ReasonCode{}
		}
		if shape&4 != 0 {
			d.Issues = []preflight.Issue{{Path: path, Code: preflight.IssueCode(code), Message: msg}, {Message: reason}}
		} else if shape&8 != 0 {
			d.Issues = []preflight.Issue{}
		}
		if shape&16 != 0 {
			d.Recommendation = &preflight.Recommendation{Action: preflight.RecommendedAction(action), ResultReference: ref}
		}
		checkDecisionJSON(t, d)
	})
}

// BenchmarkDecisionJSON compares, in one run, json.Marshal with
// appendDecisionJSON on the tool-call route's small allow answer.
func BenchmarkDecisionJSON(b *testing.B) {
	d, err := preflight.DecideJSON([]byte(toolAllow))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := appendDecisionJSON(make([]byte, 0, 512), d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
