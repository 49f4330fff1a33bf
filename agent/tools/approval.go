package tools

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/strictjson"
)

// ApprovalWhen is when the calls of a tool need a person's consent before
// they run.
type ApprovalWhen int

const (
	// ApprovalNever: no call asks (the default).
	ApprovalNever ApprovalWhen = iota
	// ApprovalAlways: every call asks.
	ApprovalAlways
	// ApprovalDestructive: a call asks when the tool is destructive in the
	// set's catalog: its "effects" say "destructive", or, without them,
	// its annotations do by MCP's rules (destructiveHint true or absent,
	// and not readOnlyHint). A tool the catalog lacks asks: its effects
	// are unknown.
	ApprovalDestructive
	// ApprovalAboveUSD: a call asks when its estimated cost (the tool's
	// PriceUSD) is above Approval.AboveUSD.
	ApprovalAboveUSD
)

// Approval is a tool's consent policy: when a call of it must be approved
// by a person before it runs. The zero value never asks.
type Approval struct {
	// When is the rule.
	When ApprovalWhen
	// AboveUSD is, for ApprovalAboveUSD, the estimated cost a call must
	// exceed to ask: a non-negative decimal, compared exactly.
	AboveUSD json.Number
}

// Consent is whether one call needs a person's consent, and why: what a
// guard shows the person along with the call.
type Consent struct {
	// Needed is true when the call must not run before a person approved
	// it.
	Needed bool
	// Reason says why it asks, in a sentence ("" when it does not).
	Reason string
	// EstimatedCostUSD is what the call is expected to cost (the tool's
	// PriceUSD, "0" when it has none).
	EstimatedCostUSD json.Number
}

// Consent reports whether a call of name with args needs a person's
// consent under its tool's Approval (the spec for names the set lacks
// gives theirs). It is the one place of this rule: the MCP guard, the
// proxy and the adapters all ask it.
func (t *Set) Consent(name string, args json.RawMessage) Consent {
	s, known := t.byName[name]
	if !known {
		s = &t.fallback
	}
	cost := s.PriceUSD // as Proposal prices the call
	if cost == "" {
		cost = "0"
	}
	c := Consent{EstimatedCostUSD: cost}
	switch s.Approval.When {
	case ApprovalAlways:
		c.Needed, c.Reason = true, "every call of "+name+" needs approval"
	case ApprovalDestructive:
		provider := s.Operation.Provider
		if !known {
			provider = t.provider
		}
		e, ok := t.catalog.EffectsOf(provider, name)
		switch {
		case !known || !ok:
			c.Needed, c.Reason = true, name+" needs approval when it may be destructive, and its effects are unknown"
		case e == preflight.EffectsDestructive:
			c.Needed, c.Reason = true, name+" is destructive (by its catalog effects or its MCP destructiveHint) and needs approval"
		}
	case ApprovalAboveUSD:
		if decimal.Compare(string(cost), string(s.Approval.AboveUSD)) > 0 {
			c.Needed, c.Reason = true, "the estimated cost of the call, $"+string(cost)+", is above $"+string(s.Approval.AboveUSD)+", above which "+name+" needs approval"
		}
	}
	return c
}

// approvalIssue checks an Approval given in Go, at the JSON Pointer at.
func approvalIssue(at string, a Approval) *preflight.Issue {
	switch a.When {
	case ApprovalNever, ApprovalAlways, ApprovalDestructive:
		if a.AboveUSD != "" {
			return &preflight.Issue{Path: at + "/aboveUsd", Code: preflight.IssueUnknownField, Message: "AboveUSD is only for ApprovalAboveUSD"}
		}
		return nil
	case ApprovalAboveUSD:
		if msg := aboveUSDProblem(string(a.AboveUSD)); msg != "" {
			return &preflight.Issue{Path: at + "/aboveUsd", Code: preflight.IssueType, Message: msg}
		}
		return nil
	}
	return &preflight.Issue{Path: at, Code: preflight.IssueEnum, Message: "unknown ApprovalWhen " + strconv.Itoa(int(a.When))}
}

// aboveUSDProblem says what is wrong with the text of an aboveUsd amount,
// "" when it is a plain non-negative decimal up to 1,000,000,000.
func aboveUSDProblem(s string) string {
	want := "expected a non-negative decimal of dollars no greater than 1000000000 (such as 0.50), found " + strconv.Quote(clip.String(s))
	if _, err := decimal.ParseBounded(s); err != nil || !validJSONNumber(s) {
		return want
	}
	if decimal.Compare(s, "0") < 0 || decimal.Compare(s, "1000000000") > 0 {
		return want
	}
	return ""
}

// validJSONNumber reports whether s is the text of one JSON number.
func validJSONNumber(s string) bool {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return false
	}
	_, ok := v.(json.Number)
	return ok
}

// approvalNames are the string forms of "approval" in a tool-spec file.
var approvalNames = []string{"always", "destructive"}

// decodeApproval reads the "approval" member of a tool-spec file's
// operation, at the JSON Pointer at: "always", "destructive", or
// {"aboveUsd": AMOUNT} with AMOUNT a JSON number or a string holding one.
func decodeApproval(at string, raw json.RawMessage) (Approval, *preflight.Issue) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return Approval{}, &preflight.Issue{Path: at, Code: preflight.IssueType, Message: "expected \"always\", \"destructive\" or {\"aboveUsd\": AMOUNT}"}
	}
	switch v := v.(type) {
	case string:
		switch v {
		case "always":
			return Approval{When: ApprovalAlways}, nil
		case "destructive":
			return Approval{When: ApprovalDestructive}, nil
		}
		return Approval{}, &preflight.Issue{Path: at, Code: preflight.IssueEnum,
			Message: "expected one of " + quoted(approvalNames) + " or {\"aboveUsd\": AMOUNT}, found " + strconv.Quote(clip.String(v))}
	case map[string]any:
		var members map[string]json.RawMessage
		json.Unmarshal(raw, &members) // v decoded, so members do (duplicates were refused by the catalog decoder)
		for name := range members {
			if name != "aboveUsd" {
				return Approval{}, &preflight.Issue{Path: at + "/" + strictjson.EscapePointerToken(name), Code: preflight.IssueUnknownField,
					Message: "unknown member " + strconv.Quote(clip.String(name)) + "; expected \"aboveUsd\""}
			}
		}
		m, ok := members["aboveUsd"]
		if !ok {
			return Approval{}, &preflight.Issue{Path: at + "/aboveUsd", Code: preflight.IssueRequired, Message: "missing member \"aboveUsd\": the estimated cost in dollars above which a call asks"}
		}
		text := string(bytes.TrimSpace(m))
		var s string
		if text != "" && text[0] == '"' && json.Unmarshal(m, &s) == nil {
			text = s
		} else if !validJSONNumber(text) {
			return Approval{}, &preflight.Issue{Path: at + "/aboveUsd", Code: preflight.IssueType, Message: "expected a decimal number of dollars (a JSON number or a string holding one), found " + clip.String(text)}
		}
		if msg := aboveUSDProblem(text); msg != "" {
			code := preflight.IssueType
			if validJSONNumber(text) {
				code = rangeCode(decimal.Compare(text, "0") < 0)
			}
			return Approval{}, &preflight.Issue{Path: at + "/aboveUsd", Code: code, Message: msg}
		}
		return Approval{When: ApprovalAboveUSD, AboveUSD: json.Number(text)}, nil
	}
	return Approval{}, &preflight.Issue{Path: at, Code: preflight.IssueType, Message: "expected \"always\", \"destructive\" or {\"aboveUsd\": AMOUNT}, found " + clip.String(string(bytes.TrimSpace(raw)))}
}

func quoted(names []string) string {
	var b []byte
	for i, n := range names {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendQuote(b, n)
	}
	return string(b)
}
