package tools

import (
	"errors"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

func TestNewSetRefusesBadSpecs(t *testing.T) {
	op := func(provider, name string, aliases ...string) preflight.Operation {
		return preflight.Operation{Provider: provider, Name: name, Aliases: aliases}
	}
	tests := []struct {
		name    string
		unknown Spec
		specs   []Spec
		want    []preflight.Issue // path and code only
	}{
		{"numbers out of range",
			Spec{RetryCap: "0"},
			[]Spec{{Operation: op("mcp", "a"), PriceUSD: "-1", TTLSeconds: "abc"}, {Operation: op("mcp", "b"), RetryCap: "1.5"}},
			[]preflight.Issue{{Path: "/unknown/retryCap", Code: preflight.IssueMinimum}, {Path: "/0/priceUsd", Code: preflight.IssueMinimum},
				{Path: "/0/ttlSeconds", Code: preflight.IssueType}, {Path: "/1/retryCap", Code: preflight.IssueInteger}}},
		{"a name two providers use",
			Spec{},
			[]Spec{{Operation: op("mcp", "x")}, {Operation: op("other", "y", "x")}},
			[]preflight.Issue{{Path: "/1/aliases/0", Code: preflight.IssueDuplicateOperation}}},
		{"a name one provider uses twice is the catalog's to report",
			Spec{},
			[]Spec{{Operation: op("mcp", "x")}, {Operation: op("mcp", "x")}},
			[]preflight.Issue{{Path: "/1/name", Code: preflight.IssueDuplicateOperation}}},
		{"catalog problems come with the spec problems",
			Spec{},
			[]Spec{{Operation: op("", "x"), PriceUSD: "2e9"}},
			[]preflight.Issue{{Path: "/0/provider", Code: preflight.IssueRequired}, {Path: "/0/priceUsd", Code: preflight.IssueMaximum}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := NewSet(tt.unknown, tt.specs...)
			var pe *preflight.Error
			if !errors.As(err, &pe) {
				t.Fatalf("NewSet = %v, %v; want a *preflight.Error", ts, err)
			}
			var got []preflight.Issue
			for _, is := range pe.Details {
				got = append(got, preflight.Issue{Path: is.Path, Code: is.Code})
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("issues (-want +got):\n%s\n%v", d, pe.Details)
			}
		})
	}
}

func TestNewSetAcceptsDefaultsAndBounds(t *testing.T) {
	specs := []Spec{
		{Operation: preflight.Operation{Provider: "mcp", Name: "free"}},
		{Operation: preflight.Operation{Provider: "mcp", Name: "dear"}, PriceUSD: "1000000000", TTLSeconds: "1000000000", RetryCap: "1000000000"},
		{Operation: preflight.Operation{Provider: "mcp", Name: "cheap"}, PriceUSD: "0.000001", TTLSeconds: "0", RetryCap: "1"},
	}
	if _, err := NewSet(Spec{PriceUSD: "0.01"}, specs...); err != nil {
		t.Fatalf("NewSet: %v", err)
	}
}
