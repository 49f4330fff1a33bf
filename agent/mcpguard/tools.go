package mcpguard

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolset builds the toolset of a session from its listed tools and the
// configured specs. A listed tool whose inputSchema cannot be used takes
// any object: a warning naming it and the reason is logged, and unchecked
// maps its name to the reason.
func (g *guard) toolset(listed []*mcp.Tool) (set *tools.Set, unchecked map[string]string, err error) {
	unchecked = map[string]string{}
	byName := make(map[string]*mcp.Tool, len(listed))
	for _, t := range listed {
		if t != nil && byName[t.Name] == nil {
			byName[t.Name] = t
		}
	}
	var specs []tools.Spec
	configured := make(map[string]bool, len(g.opts.Specs))
	for _, s := range g.opts.Specs {
		configured[s.Operation.Name] = true
		for _, a := range s.Operation.Aliases {
			configured[a] = true
		}
		if s.PriceUSD == "" {
			s.PriceUSD = g.opts.Defaults.PriceUSD
		}
		if s.TTLSeconds == "" {
			s.TTLSeconds = g.opts.Defaults.TTLSeconds
		}
		if s.RetryCap == "" {
			s.RetryCap = g.opts.Defaults.RetryCap
		}
		if s.IdempotencySeconds == "" {
			s.IdempotencySeconds = g.opts.Defaults.IdempotencySeconds
		}
		if s.Operation.Provider == "" {
			s.Operation.Provider = tools.DefaultProvider
		}
		if t := byName[s.Operation.Name]; t != nil {
			if s.Operation.Schema == nil {
				s.Operation.Schema = g.usableSchema(t, unchecked)
				s.Operation.AssertFormat = s.Operation.AssertFormat || g.opts.AssertFormat
			}
			if s.Operation.Annotations == nil {
				s.Operation.Annotations = annotations(t)
			}
		}
		specs = append(specs, s)
	}
	for _, t := range listed {
		if t == nil || configured[t.Name] || byName[t.Name] != t {
			continue
		}
		s := g.opts.Defaults
		s.Operation = preflight.Operation{Provider: tools.DefaultProvider, Name: t.Name,
			Schema: g.usableSchema(t, unchecked), Annotations: annotations(t), AssertFormat: g.opts.AssertFormat}
		specs = append(specs, s)
	}
	set, err = tools.NewSet(g.opts.Defaults, specs...)
	return set, unchecked, err
}

// usableSchema returns t's inputSchema when preflight can check payloads
// with it (the full JSON Schema 2020-12 or draft-07 vocabulary, by its
// $schema), else nil (any object) after logging why and noting it in
// unchecked.
func (g *guard) usableSchema(t *mcp.Tool, unchecked map[string]string) json.RawMessage {
	if t.InputSchema == nil {
		return nil
	}
	b, err := json.Marshal(t.InputSchema)
	if err == nil {
		_, err = preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "n", Schema: b})
	}
	if err != nil {
		reason := schemaReason(err)
		g.opts.Logger.Warn("mcpguard: a tool's inputSchema cannot be used; its arguments are not checked",
			"tool", t.Name, "reason", reason)
		unchecked[t.Name] = reason
		return nil
	}
	return b
}

// schemaReason says why a schema was refused: the first problem, at its
// JSON Pointer in the schema, and how many more there are.
func schemaReason(err error) string {
	var e *preflight.Error
	if !errors.As(err, &e) || len(e.Details) == 0 {
		return err.Error()
	}
	d := e.Details[0]
	r := string(d.Code) + " at " + strings.TrimPrefix(d.Path, "/0/schema") + ": " + d.Message
	if n := len(e.Details) - 1; n > 0 {
		r += " (and " + strconv.Itoa(n) + " more)"
	}
	return r
}

// annotations converts the MCP annotations of t. A tool without
// annotations gets empty ones, which mean MCP's defaults: not read-only,
// destructive (so never reused, and never retried after a terminal
// failure whatever the retry cap).
func annotations(t *mcp.Tool) *preflight.ToolAnnotations {
	if t.Annotations == nil {
		return &preflight.ToolAnnotations{}
	}
	b, err := json.Marshal(t.Annotations)
	if err != nil {
		return nil
	}
	var a preflight.ToolAnnotations
	if json.Unmarshal(b, &a) != nil {
		return nil
	}
	return &a
}
