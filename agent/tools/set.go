package tools

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/agentpreflight/preflight"
)

// Spec is what a [Set] knows about one tool: its catalog entry
// (operation, payload schema, effects) and the facts a proposal needs
// besides the arguments.
type Spec struct {
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
	// IdempotencySeconds is how long, in whole seconds, a completed call
	// answers an identical call with its result instead of running again
	// (for runtimes that re-issue a call whose answer they lost, such as
	// the MCP guard). Empty means the runtime's default; 0 turns it off.
	// Session itself does not read it.
	IdempotencySeconds json.Number
	// Approval is when a call of the tool needs a person's consent before
	// it runs (see [Set.Consent]); the zero value never asks. Session
	// itself does not read it: a runtime that can ask a person does (the
	// MCP guard asks through the client).
	Approval Approval
}

// Set is a tool set: it resolves a tool name and raw JSON arguments into a
// proposal through a catalog built from its specs. It is immutable and
// safe for concurrent use.
type Set struct {
	catalog  *preflight.Catalog
	byName   map[string]*Spec
	provider string
	fallback Spec // for names the set lacks
}

// DefaultProvider is the provider of names a [Set] lacks, of specs
// without one in the adapters, and the one MCP adapters give the tools
// they list.
const DefaultProvider = "mcp"

// NewSet builds a tool set of specs. Names must be unique across specs
// (aliases included), whatever their providers. Problems are reported at
// once in a *[preflight.Error] whose details point into specs as a JSON
// array of operations with the members of a tool-spec file (see
// [DecodeSpecs]): the catalog's problems as [preflight.NewCatalog]
// reports them, a name used by two specs at "/1/name" or "/1/aliases/0",
// and a PriceUSD, TTLSeconds or RetryCap out of its range at "/1/priceUsd",
// "/1/ttlSeconds" or "/1/retryCap" (at "/unknown/priceUsd" and so on for
// unknown's). unknown gives the price, TTL and retry cap of calls to names
// the set lacks (its Operation is ignored); they are decided as
// operations the catalog lacks, under the Guard's agent.UnsupportedPolicy.
func NewSet(unknown Spec, specs ...Spec) (*Set, error) {
	issues := specNumberIssues("/unknown/", unknown)
	ops := make([]preflight.Operation, len(specs))
	for i, s := range specs {
		ops[i] = s.Operation
		issues = append(issues, specNumberIssues("/"+strconv.Itoa(i)+"/", s)...)
	}
	issues = append(issues, crossProviderNames(ops)...)
	c, err := preflight.NewCatalog(ops...)
	if len(issues) > 0 {
		return nil, toolsetError(issues, err)
	}
	if err != nil {
		return nil, err
	}
	t := &Set{catalog: c, byName: make(map[string]*Spec, len(specs)), provider: DefaultProvider, fallback: unknown}
	for i := range specs {
		s := specs[i]
		for _, n := range append([]string{s.Operation.Name}, s.Operation.Aliases...) {
			t.byName[n] = &s
		}
	}
	return t, nil
}

// specNumberIssues checks the numbers of s (empty ones take their
// defaults) as a tool-spec file's members, reporting them under at.
func specNumberIssues(at string, s Spec) []preflight.Issue {
	var issues []preflight.Issue
	for _, m := range []struct {
		name string
		n    json.Number
	}{{"priceUsd", s.PriceUSD}, {"ttlSeconds", s.TTLSeconds}, {"retryCap", s.RetryCap}, {"idempotencySeconds", s.IdempotencySeconds}} {
		if m.n == "" {
			continue
		}
		if _, code, msg := specNumber(m.name, json.RawMessage(m.n)); msg != "" {
			issues = append(issues, preflight.Issue{Path: at + m.name, Code: code, Message: msg})
		}
	}
	if is := approvalIssue(at+"approval", s.Approval); is != nil {
		issues = append(issues, *is)
	}
	return issues
}

// crossProviderNames reports a name or alias that two operations of
// different providers share: calls name a tool without its provider. Two
// of one provider are the catalog's duplicate_operation already.
func crossProviderNames(ops []preflight.Operation) []preflight.Issue {
	type use struct {
		op       int
		provider string
	}
	first := make(map[string]use, len(ops))
	var issues []preflight.Issue
	for i, op := range ops {
		for j, name := range append([]string{op.Name}, op.Aliases...) {
			if name == "" {
				continue
			}
			prev, seen := first[name]
			if !seen {
				first[name] = use{i, op.Provider}
				continue
			}
			if prev.provider == op.Provider {
				continue
			}
			path := "/" + strconv.Itoa(i) + "/name"
			if j > 0 {
				path = "/" + strconv.Itoa(i) + "/aliases/" + strconv.Itoa(j-1)
			}
			issues = append(issues, preflight.Issue{Path: path, Code: preflight.IssueDuplicateOperation,
				Message: "tool name " + strconv.Quote(name) + " is already used at /" + strconv.Itoa(prev.op) +
					" (provider " + strconv.Quote(prev.provider) + "); calls name a tool without its provider, so names must be unique across providers"})
		}
	}
	return issues
}

// toolsetError reports issues together with the details of catalogErr, the
// catalog's error (nil when the catalog itself was valid).
func toolsetError(issues []preflight.Issue, catalogErr error) error {
	code := preflight.ErrorInvalidRequest
	var pe *preflight.Error
	if errors.As(catalogErr, &pe) {
		issues, code = append(pe.Details, issues...), pe.Code
	} else if catalogErr != nil {
		return catalogErr
	}
	msg := "the tool specs are not valid"
	if len(issues) > 1 {
		msg += " (" + strconv.Itoa(len(issues)) + " problems)"
	}
	return &preflight.Error{Code: code, Message: msg, Details: issues}
}

// Catalog returns the catalog the set decides with.
func (t *Set) Catalog() *preflight.Catalog { return t.catalog }

// Spec returns the spec of the tool name calls, and false when the set
// lacks it (the spec is then the one for unknown names, with provider
// DefaultProvider).
func (t *Set) Spec(name string) (Spec, bool) {
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
func (t *Set) Proposal(name string, args json.RawMessage) preflight.ToolCallRequest {
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

// Specs returns the set's specs in catalog order (not the spec for
// unknown names). The result is a copy.
func (t *Set) Specs() []Spec {
	ops := t.catalog.Operations()
	out := make([]Spec, len(ops))
	for i, op := range ops {
		out[i] = *t.byName[op.Name]
		out[i].Operation = op
	}
	return out
}
