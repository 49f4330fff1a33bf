package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/google/go-cmp/cmp"
)

func TestDecodeSpecs(t *testing.T) {
	specs, err := DecodeSpecs([]byte(`{"operations":[
		{"provider":"mcp","name":"market_quote","effects":"read_only","priceUsd":0.05,"ttlSeconds":600,"retryCap":2,
		 "schema":{"type":"object","required":["symbol"]}},
		{"provider":"mcp","name":"send_email","annotations":{"destructiveHint":false},"idempotencySeconds":0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("%d specs, want the file's 2 (built-ins left out)", len(specs))
	}
	got := []string{string(specs[0].PriceUSD), string(specs[0].TTLSeconds), string(specs[0].RetryCap), specs[0].Operation.Name,
		specs[0].Operation.Effects.String(), string(specs[1].PriceUSD), specs[1].Operation.Name,
		string(specs[0].IdempotencySeconds), string(specs[1].IdempotencySeconds)}
	want := []string{"0.05", "600", "2", "market_quote", "read_only", "", "send_email", "", "0"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("specs (-want +got):\n%s", d)
	}
	if _, err := NewSet(Spec{}, specs...); err != nil {
		t.Fatalf("the specs do not make a toolset: %v", err)
	}
}

func TestDecodeSpecsErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		summary string            // the Error's message
		want    []preflight.Issue // path and code only
	}{
		{"bad spec values", `{"operations":[{"provider":"p","name":"a","priceUsd":-1,"ttlSeconds":1.5,"retryCap":0}]}`,
			"the tool-spec file has 3 problems",
			[]preflight.Issue{{Path: "/operations/0/priceUsd", Code: preflight.IssueMinimum},
				{Path: "/operations/0/ttlSeconds", Code: preflight.IssueInteger}, {Path: "/operations/0/retryCap", Code: preflight.IssueMinimum}}},
		{"an idempotency window out of range", `{"operations":[{"provider":"p","name":"a","idempotencySeconds":-5}]}`,
			"the tool-spec file has 1 problem",
			[]preflight.Issue{{Path: "/operations/0/idempotencySeconds", Code: preflight.IssueMinimum}}},
		{"catalog and spec problems together", `{"operations":[{"provider":"mcp","name":"","ttlSeconds":-1}]}`,
			"the tool-spec file has 2 problems",
			[]preflight.Issue{{Path: "/operations/0/name", Code: preflight.IssueMinLength},
				{Path: "/operations/0/ttlSeconds", Code: preflight.IssueMinimum}}},
		// 1e10 written with 800 zeros more: a float64 reads it as 1e9.
		{"a price past the bound, written long", `{"operations":[{"provider":"p","name":"a","priceUsd":1` + strings.Repeat("0", 810) + `e-800}]}`,
			"the tool-spec file has 1 problem",
			[]preflight.Issue{{Path: "/operations/0/priceUsd", Code: preflight.IssueMaximum}}},
		{"a string price", `{"operations":[{"provider":"p","name":"a","priceUsd":"0.1"}]}`,
			"the tool-spec file has 1 problem",
			[]preflight.Issue{{Path: "/operations/0/priceUsd", Code: preflight.IssueType}}},
		{"unknown member next to spec members", `{"operations":[{"provider":"p","name":"a","priceUsd":1,"cost":2}]}`,
			"the tool-spec file has 1 problem",
			[]preflight.Issue{{Path: "/operations/0/cost", Code: preflight.IssueUnknownField}}},
		{"catalog problem under spec members", `{"operations":[{"provider":"p","name":"a","priceUsd":1,"schema":{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"}}}}]}`,
			"the schema uses a keyword outside the supported subset",
			[]preflight.Issue{{Path: "/operations/0/schema/properties/x/$ref", Code: preflight.IssueUnsupportedSchemaKeyword}}},
		{"duplicate member", `{"operations":[{"provider":"p","name":"a","name":"b","priceUsd":1}]}`,
			"the tool-spec file is not valid JSON",
			[]preflight.Issue{{Path: "/operations/0/name", Code: preflight.IssueDuplicateKey}}},
		{"same operation twice", `{"operations":[{"provider":"p","name":"a","priceUsd":1},{"provider":"p","name":"a"}]}`,
			"the tool-spec file has 1 problem",
			[]preflight.Issue{{Path: "/operations/1/name", Code: preflight.IssueDuplicateOperation}}},
		{"not an object", `[]`,
			"the tool-spec file has 1 problem",
			[]preflight.Issue{{Path: "", Code: preflight.IssueType}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeSpecs([]byte(tt.file))
			var pe *preflight.Error
			if !errors.As(err, &pe) {
				t.Fatalf("want a *preflight.Error, got %v", err)
			}
			var got []preflight.Issue
			for _, is := range pe.Details {
				got = append(got, preflight.Issue{Path: is.Path, Code: is.Code})
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("issues (-want +got):\n%s\n%v", d, pe.Details)
			}
			if d := cmp.Diff(tt.summary, pe.Message); d != "" {
				t.Errorf("summary (-want +got):\n%s", d)
			}
		})
	}
}

// TestDecodeSpecsUnknownMember: the list of members an operation may
// have quotes the spec members like the catalog's.
func TestDecodeSpecsUnknownMember(t *testing.T) {
	_, err := DecodeSpecs([]byte(`{"operations":[{"provider":"p","name":"a","ttl":60}]}`))
	var pe *preflight.Error
	if !errors.As(err, &pe) || len(pe.Details) != 1 {
		t.Fatalf("want one issue, got %v", err)
	}
	want := `unknown member "ttl"; expected one of "provider", "name", "aliases", "schema", "effects", "annotations", "assertFormat", "priceUsd", "ttlSeconds", "retryCap", "idempotencySeconds", "approval"`
	if d := cmp.Diff(want, pe.Details[0].Message); d != "" {
		t.Errorf("message (-want +got):\n%s", d)
	}
}

func TestDecodeSpecsCatalogFile(t *testing.T) {
	// Every catalog file is a tool-spec file.
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "catalog", "operations.json"))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := DecodeSpecs(data)
	if err != nil || len(specs) == 0 {
		t.Fatalf("%d specs, %v", len(specs), err)
	}
}

func FuzzDecodeSpecs(f *testing.F) {
	f.Add([]byte(`{"operations":[{"provider":"mcp","name":"q","priceUsd":0.05,"ttlSeconds":60,"retryCap":2}]}`))
	f.Add([]byte(`{"operations":[{"provider":"p","name":"a","priceUsd":-1}]}`))
	f.Add([]byte(`{"operations":[]}`))
	f.Add([]byte(`{"operations":[{"provider":"mcp","name":"rm","approval":"destructive","effects":"destructive"}]}`))
	f.Add([]byte(`{"operations":[{"provider":"mcp","name":"buy","priceUsd":2,"approval":{"aboveUsd":"1.5"}}]}`))
	f.Add([]byte(`{"operations":[{"provider":"mcp","name":"x","approval":{"aboveUsd":1e400}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		specs, err := DecodeSpecs(data)
		if err != nil {
			var pe *preflight.Error
			if !errors.As(err, &pe) || pe.Message == "" {
				t.Fatalf("not a *preflight.Error with a message: %v", err)
			}
			for _, is := range pe.Details {
				if is.Code == "" || is.Message == "" {
					t.Fatalf("an issue without its code or message: %+v", is)
				}
			}
			return
		}
		set, err := NewSet(Spec{}, specs...)
		if err != nil {
			t.Fatalf("decoded specs do not build: %v", err)
		}
		for _, s := range specs {
			c := set.Consent(s.Operation.Name, nil)
			if (s.Approval.When == ApprovalAlways) != (c.Needed && s.Approval.When == ApprovalAlways) || (c.Needed && c.Reason == "") {
				t.Fatalf("consent of %s under %+v: %+v", s.Operation.Name, s.Approval, c)
			}
			if s.Approval.When == ApprovalNever && c.Needed {
				t.Fatalf("%s asks without an approval policy", s.Operation.Name)
			}
		}
	})
}
