package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
)

// configProblem is a setting of the proxy that is legal but does not do
// what its author meant: a warning line, or with --strict an error.
type configProblem struct {
	code string // a stable name for the kind, logged as "problem"
	msg  string
}

// startProblems returns the problems of the proxy's settings that show
// before any upstream answers: a budget that no price can bind.
func startProblems(o proxyOptions, g mcpguard.Options) []configProblem {
	var out []configProblem
	if budget, ok := new(big.Rat).SetString(o.budgetUSD); ok && budget.Sign() > 0 {
		priced := false
		for _, s := range g.Specs {
			if p, ok := new(big.Rat).SetString(string(s.PriceUSD)); ok && p.Sign() > 0 {
				priced = true
			}
		}
		if !priced {
			out = append(out, configProblem{"budget_unbound",
				"--budget-usd " + o.budgetUSD + " cannot bind: no operation of --operations has a priceUsd above 0, so every call costs 0; price the tools that cost money"})
		}
	}
	if o.store != "" && o.approvalKey == "" {
		for _, s := range g.Specs {
			if s.Approval.When != tools.ApprovalNever {
				out = append(out, configProblem{"approval_key_per_process",
					"--store is shared by replicas but no --approval-key is given: an approval asked by one replica is refused by the others; give every replica the same --approval-key FILE"})
				break
			}
		}
	}
	return out
}

// listChecker compares the upstream's tools/list with the configured
// operations: a configured tool the upstream does not list, and a listed
// tool whose inputSchema the guard cannot use, are each reported once.
type listChecker struct {
	log    *slog.Logger
	strict bool
	ops    []string // configured tool names (provider mcp)

	mu       sync.Mutex
	pages    map[string]bool // tools of the list being read, from its first page
	reported map[string]bool
}

func newListChecker(log *slog.Logger, strict bool, g mcpguard.Options) *listChecker {
	c := &listChecker{log: log, strict: strict, reported: map[string]bool{}}
	for _, s := range g.Specs {
		c.ops = append(c.ops, s.Operation.Name)
	}
	return c
}

// report logs p as a warning, or an error with --strict.
func (c *listChecker) report(key string, p configProblem, attrs ...any) {
	c.mu.Lock()
	done := c.reported[key]
	c.reported[key] = true
	c.mu.Unlock()
	if done {
		return
	}
	reportProblem(c.log, c.strict, p, attrs...)
}

func reportProblem(log *slog.Logger, strict bool, p configProblem, attrs ...any) {
	attrs = append([]any{"problem", p.code}, attrs...)
	if strict {
		log.Error("proxy: "+p.msg, attrs...)
		return
	}
	log.Warn("proxy: "+p.msg, attrs...)
}

// sawList takes one page of the upstream's tools/list result.
func (c *listChecker) sawList(cursor string, result json.RawMessage) {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	for _, t := range r.Tools {
		if len(t.InputSchema) == 0 {
			continue
		}
		if _, err := preflight.NewCatalog(preflight.Operation{Provider: "mcp", Name: "t", Schema: t.InputSchema}); err != nil {
			reason := schemaReason(err)
			c.report("schema "+t.Name, configProblem{"schema_unusable",
				"the upstream's inputSchema of tool " + t.Name + " cannot be used: its arguments are checked as any JSON object (" + reason + ")"},
				"tool", t.Name, "reason", reason)
		}
	}
	c.mu.Lock()
	if cursor == "" {
		c.pages = map[string]bool{}
	}
	if c.pages == nil { // a later page of a list whose start was not seen
		c.mu.Unlock()
		return
	}
	for _, t := range r.Tools {
		c.pages[t.Name] = true
	}
	var missing []string
	if r.NextCursor == "" {
		for _, name := range c.ops {
			if !c.pages[name] {
				missing = append(missing, name)
			}
		}
		c.pages = nil
	}
	c.mu.Unlock()
	for _, name := range missing {
		c.report("missing "+name, configProblem{"tool_not_listed",
			"--operations configures tool " + name + ", which the upstream does not list: its settings apply to nothing (a misspelt name leaves the real tool unpriced)"},
			"tool", name)
	}
}

// schemaReason is the first issue of a catalog error, for a log line.
func schemaReason(err error) string {
	var e *preflight.Error
	if errors.As(err, &e) && len(e.Details) > 0 {
		d := e.Details[0]
		return strings.TrimPrefix(d.Path, "/0/schema") + ": " + d.Message
	}
	return err.Error()
}
