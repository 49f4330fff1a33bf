package mcpguard

import (
	"encoding/json"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolset builds the toolset of a session from its listed tools and the
// configured specs. A listed tool whose inputSchema cannot be used takes
// any object, and a warning naming it and the reason is logged.
func (g *guard) toolset(listed []*mcp.Tool) (*tools.Set, error) {
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
				s.Operation.Schema = g.usableSchema(t)
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
			Schema: g.usableSchema(t), Annotations: annotations(t)}
		specs = append(specs, s)
	}
	return tools.NewSet(g.opts.Defaults, specs...)
}

// usableSchema returns t's inputSchema when preflight can check payloads
// with it (the full JSON Schema 2020-12 or draft-07 vocabulary, by its
// $schema), else nil (any object) after logging why.
func (g *guard) usableSchema(t *mcp.Tool) json.RawMessage {
	if t.InputSchema == nil {
		return nil
	}
	b, err := json.Marshal(t.InputSchema)
	if err == nil {
		_, err = preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "n", Schema: b})
	}
	if err != nil {
		g.opts.Logger.Warn("mcpguard: a tool's inputSchema cannot be used; its arguments are not checked",
			"tool", t.Name, "reason", err.Error())
		return nil
	}
	return b
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
