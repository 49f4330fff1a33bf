package agent

import (
	"encoding/json"

	"github.com/agentpreflight/preflight"
)

// ToolSpec is what a [Toolset] knows about one tool: its catalog entry
// (operation, payload schema, effects) and the facts a proposal needs
// besides the arguments.
type ToolSpec struct {
	// Operation is the tool's catalog entry; Operation.Name is the tool
	// name calls use.
	Operation preflight.Operation
	// PriceUSD is what one call costs (ToolCall.EstimatedExternalCostUSD).
	// Empty means 0.
	PriceUSD json.Number
	// TTLSeconds is how old a saved result may be and still be reused
	// (FreshnessTTLSeconds). Empty or 0 disables reuse.
	TTLSeconds json.Number
	// RetryCap is how many terminal failures of the same call end
	// retrying. Empty means 1.
	RetryCap json.Number
}

// Toolset resolves a tool name and raw JSON arguments into a proposal
// through a catalog built from its specs. It is immutable and safe for
// concurrent use.
type Toolset struct {
	catalog  *preflight.Catalog
	byName   map[string]*ToolSpec
	provider string
	fallback ToolSpec // for names the toolset lacks
}

// DefaultProvider is the provider of names a [Toolset] lacks, and the one
// MCP adapters give the tools they list.
const DefaultProvider = "mcp"

// NewToolset builds a toolset of specs. Names must be unique across specs
// (aliases included); problems are reported as [preflight.NewCatalog]
// reports them, with pointers into specs as a JSON array of operations.
// unknown gives the price, TTL and retry cap of calls to names the toolset
// lacks (its Operation is ignored); they are decided as operations the
// catalog lacks, under the Guard's UnsupportedPolicy.
func NewToolset(unknown ToolSpec, specs ...ToolSpec) (*Toolset, error) {
	ops := make([]preflight.Operation, len(specs))
	for i, s := range specs {
		ops[i] = s.Operation
	}
	c, err := preflight.NewCatalog(ops...)
	if err != nil {
		return nil, err
	}
	t := &Toolset{catalog: c, byName: make(map[string]*ToolSpec, len(specs)), provider: DefaultProvider, fallback: unknown}
	for i := range specs {
		s := specs[i]
		for _, n := range append([]string{s.Operation.Name}, s.Operation.Aliases...) {
			if _, dup := t.byName[n]; !dup {
				t.byName[n] = &s
			}
		}
	}
	return t, nil
}

// Catalog returns the catalog the toolset decides with.
func (t *Toolset) Catalog() *preflight.Catalog { return t.catalog }

// Spec returns the spec of the tool name calls, and false when the toolset
// lacks it (the spec is then the one for unknown names, with provider
// DefaultProvider).
func (t *Toolset) Spec(name string) (ToolSpec, bool) {
	if s, ok := t.byName[name]; ok {
		return *s, true
	}
	s := t.fallback
	s.Operation = preflight.Operation{Provider: t.provider, Name: name}
	return s, false
}

// Proposal returns the tool-call request for a call of name with raw JSON
// arguments args (nil or JSON null mean {}). The caller fills RunID,
// StepID, Budget, Task and Capabilities.
func (t *Toolset) Proposal(name string, args json.RawMessage) preflight.ToolCallRequest {
	s, _ := t.Spec(name)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	price := s.PriceUSD
	if price == "" {
		price = "0"
	}
	return preflight.ToolCallRequest{
		Tool: preflight.ToolCall{
			Provider:                 s.Operation.Provider,
			Operation:                name,
			Request:                  args,
			EstimatedExternalCostUSD: price,
		},
		FreshnessTTLSeconds: s.TTLSeconds,
		RetryCap:            s.RetryCap,
	}
}
