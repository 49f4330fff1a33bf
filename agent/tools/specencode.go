package tools

import (
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight"
)

// specFileOperation is one operation of a tool-spec file as EncodeSpecs
// writes it: the members of a catalog file's operation, then the spec
// members, each left out when it holds its default.
type specFileOperation struct {
	Provider           string                     `json:"provider"`
	Name               string                     `json:"name"`
	Aliases            []string                   `json:"aliases,omitempty"`
	Schema             json.RawMessage            `json:"schema,omitempty"`
	Effects            string                     `json:"effects,omitempty"`
	Annotations        *preflight.ToolAnnotations `json:"annotations,omitempty"`
	AssertFormat       bool                       `json:"assertFormat,omitempty"`
	PriceUSD           json.Number                `json:"priceUsd,omitempty"`
	TTLSeconds         json.Number                `json:"ttlSeconds,omitempty"`
	RetryCap           json.Number                `json:"retryCap,omitempty"`
	IdempotencySeconds json.Number                `json:"idempotencySeconds,omitempty"`
	Approval           any                        `json:"approval,omitempty"`
}

// EncodeSpecs writes specs as a tool-spec file (see [DecodeSpecs]) that
// holds them alone, "builtins": false: [DecodeSpecFile] reads it back into
// a catalog of exactly these operations, the catalog of a [Set] of specs,
// and into the same specs. A spec whose operation has URLMembers, which
// files cannot state, is an error, as is a schema that is not JSON.
func EncodeSpecs(specs []Spec) ([]byte, error) {
	ops := make([]specFileOperation, len(specs))
	for i, s := range specs {
		op := s.Operation
		if len(op.URLMembers) > 0 {
			return nil, fmt.Errorf("tools: spec %d (%q): URLMembers cannot be stated in a tool-spec file", i, op.Name)
		}
		if len(op.Schema) > 0 && !json.Valid(op.Schema) {
			return nil, fmt.Errorf("tools: spec %d (%q): the schema is not JSON", i, op.Name)
		}
		f := specFileOperation{Provider: op.Provider, Name: op.Name, Aliases: op.Aliases, Schema: op.Schema,
			Effects: op.Effects.String(), Annotations: op.Annotations, AssertFormat: op.AssertFormat,
			PriceUSD: s.PriceUSD, TTLSeconds: s.TTLSeconds, RetryCap: s.RetryCap, IdempotencySeconds: s.IdempotencySeconds}
		switch s.Approval.When {
		case ApprovalNever:
		case ApprovalAlways:
			f.Approval = "always"
		case ApprovalDestructive:
			f.Approval = "destructive"
		case ApprovalAboveUSD:
			f.Approval = map[string]string{"aboveUsd": string(s.Approval.AboveUSD)}
		default:
			return nil, fmt.Errorf("tools: spec %d (%q): unknown approval rule %d", i, op.Name, s.Approval.When)
		}
		ops[i] = f
	}
	return json.Marshal(struct {
		Builtins   bool                `json:"builtins"`
		Operations []specFileOperation `json:"operations"`
	}{false, ops})
}
