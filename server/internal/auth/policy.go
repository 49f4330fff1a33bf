package auth

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"
)

// Policy is what one principal may do, beside what the proxy's flags say
// for everyone:
//
//	"policy": {
//	  "budgetUsdPerRun": 0.50,
//	  "budgetUsd": 20, "window": "24h",
//	  "maxCallsPerRun": 40,
//	  "tools": ["market_quote", "search"],
//	  "operations": [{"name": "market_quote", "priceUsd": 0.02, "ttlSeconds": 60}]
//	}
//
// Every member is optional. A member that is set replaces the flag's
// value for this principal's runs.
type Policy struct {
	// BudgetUSDPerRun is each run's budget (in place of --budget-usd).
	BudgetUSDPerRun json.Number `json:"budgetUsdPerRun,omitempty"`
	// BudgetUSD is what all the principal's runs together may spend in
	// Window, which starts with the principal's first reservation and
	// starts again when it has passed.
	BudgetUSD json.Number `json:"budgetUsd,omitempty"`
	// Window is a Go duration, 1m to 8760h (a year); required with
	// BudgetUSD.
	Window string `json:"window,omitempty"`
	// MaxCallsPerRun is each run's call limit (in place of --max-calls).
	MaxCallsPerRun int `json:"maxCallsPerRun,omitempty"`
	// Tools, when set, are the only tools the principal sees in tools/list
	// and may call; any other is an unknown tool to it. Absent means every
	// tool; an empty list, none.
	Tools *[]string `json:"tools,omitempty"`
	// Operations override the price and TTL of tools for this principal.
	Operations []Operation `json:"operations,omitempty"`

	window time.Duration
}

// Operation overrides the catalog's price and TTL of one tool.
type Operation struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// PriceUSD, when set, is what one call costs.
	PriceUSD json.Number `json:"priceUsd,omitempty"`
	// TTLSeconds, when set, is how long a result is reused; 0 disables
	// reuse.
	TTLSeconds json.Number `json:"ttlSeconds,omitempty"`
}

// WindowDuration returns the policy's budget window, 0 without one.
func (p *Policy) WindowDuration() time.Duration { return p.window }

// Allows reports whether the policy lets its principal see and call tool.
func (p *Policy) Allows(tool string) bool {
	if p == nil || p.Tools == nil {
		return true
	}
	for _, t := range *p.Tools {
		if t == tool {
			return true
		}
	}
	return false
}

// check returns the problems of the policy at JSON Pointer at.
func (p *Policy) check(at string) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	dollars := func(member string, n json.Number) {
		if n == "" {
			return
		}
		if v, ok := new(big.Rat).SetString(string(n)); !ok || v.Sign() < 0 || strings.ContainsAny(string(n), "xX_") {
			add("%s/%s %s is not a non-negative decimal number of dollars", at, member, n)
		}
	}
	dollars("budgetUsdPerRun", p.BudgetUSDPerRun)
	dollars("budgetUsd", p.BudgetUSD)
	switch {
	case p.Window != "":
		d, err := time.ParseDuration(p.Window)
		if err != nil || d < time.Minute || d > 8760*time.Hour {
			add("%s/window %q is not a duration from 1m to 8760h", at, p.Window)
		}
		p.window = d
		if p.BudgetUSD == "" {
			add("%s/window is set without budgetUsd", at)
		}
	case p.BudgetUSD != "":
		add("%s/budgetUsd needs a window (such as \"24h\"): the period the principal's runs share it over", at)
	}
	if p.MaxCallsPerRun < 0 {
		add("%s/maxCallsPerRun %d must be 0 (no limit) or more", at, p.MaxCallsPerRun)
	}
	if p.Tools != nil {
		seen := map[string]bool{}
		for i, t := range *p.Tools {
			if t == "" || seen[t] {
				add("%s/tools/%d: %q is empty or listed twice", at, i, t)
			}
			seen[t] = true
		}
	}
	seen := map[string]bool{}
	for i, o := range p.Operations {
		oat := fmt.Sprintf("%s/operations/%d", at, i)
		if o.Name == "" || seen[o.Name] {
			add("%s/name %q is empty or overridden twice", oat, o.Name)
		}
		seen[o.Name] = true
		if o.PriceUSD == "" && o.TTLSeconds == "" {
			add("%s: give priceUsd, ttlSeconds or both", oat)
		}
		dollars(strings.TrimPrefix(oat, at+"/")+"/priceUsd", o.PriceUSD)
		if o.TTLSeconds != "" {
			if v, ok := new(big.Int).SetString(string(o.TTLSeconds), 10); !ok || v.Sign() < 0 {
				add("%s/ttlSeconds %s is not a whole number of seconds, 0 or more", oat, o.TTLSeconds)
			}
		}
	}
	return out
}

// members are the members each object of a principals file may have, by
// a pattern of its JSON Pointer ("*" for any one reference token).
var members = map[string][]string{
	"":                                  {"resource", "jwt", "principals"},
	"/jwt":                              {"issuer", "audience", "jwks", "principalClaim", "refresh"},
	"/principals/*":                     {"keySha256", "policy"},
	"/principals/*/policy":              {"budgetUsdPerRun", "budgetUsd", "window", "maxCallsPerRun", "tools", "operations"},
	"/principals/*/policy/operations/*": {"name", "priceUsd", "ttlSeconds"},
}

// unknownMembers returns a problem for each member of data that the
// format does not have, named by its JSON Pointer.
func unknownMembers(data []byte) []string {
	var v any
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil // the decoder's own error says it
	}
	var out []string
	var walk func(v any, at, pattern string)
	walk = func(v any, at, pattern string) {
		switch x := v.(type) {
		case map[string]any:
			known, checked := members[pattern]
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				child := at + "/" + pointerEscape(k)
				if checked && !contains(known, k) {
					out = append(out, fmt.Sprintf("%s: unknown member (this object has %s)", child, strings.Join(known, ", ")))
					continue
				}
				next := pattern + "/" + k
				if pattern == "/principals" {
					next = pattern + "/*"
				}
				walk(x[k], child, next)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", at, i), pattern+"/*")
			}
		}
	}
	walk(v, "", "")
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
