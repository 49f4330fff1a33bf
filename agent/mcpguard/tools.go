package mcpguard

import (
	"encoding/json"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolset builds the toolset of a session from its listed tools and the
// configured specs. A listed tool whose inputSchema does not compile in
// preflight's subset takes any object.
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
				s.Operation.Schema = usableSchema(t)
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
			Schema: usableSchema(t), Annotations: annotations(t)}
		specs = append(specs, s)
	}
	return tools.NewSet(g.opts.Defaults, specs...)
}

// usableSchema returns t's inputSchema when preflight can check payloads
// with it, else nil (any object). A top-level $schema naming draft-06,
// draft-07 or 2019-09 is dropped first (see sameMeaningDialect).
func usableSchema(t *mcp.Tool) json.RawMessage {
	if t.InputSchema == nil {
		return nil
	}
	b, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil
	}
	b = withoutOlderDialect(b)
	if _, err := preflight.NewCatalog(preflight.Operation{Provider: "p", Name: "n", Schema: b}); err != nil {
		return nil
	}
	return b
}

// withoutOlderDialect returns schema without its top-level $schema when
// that names a dialect in which preflight's keywords mean what they mean
// in 2020-12, else schema unchanged.
func withoutOlderDialect(schema []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil {
		return schema
	}
	var uri string
	if json.Unmarshal(m["$schema"], &uri) != nil || !sameMeaningDialect(uri) {
		return schema
	}
	delete(m, "$schema")
	b, err := json.Marshal(m)
	if err != nil {
		return schema
	}
	return b
}

// sameMeaningDialect reports whether uri names draft-06, draft-07 or
// 2019-09 (http or https, with or without a trailing '#'). The keywords
// preflight supports (type, properties, required, additionalProperties,
// items as one schema, enum, const, minimum, maximum, minLength,
// maxLength, pattern) mean the same in those drafts as in 2020-12, which
// is what the TypeScript SDK's draft-07 schemas need. Forms that differ,
// such as the array form of items, still fail to compile.
func sameMeaningDialect(uri string) bool {
	uri = strings.TrimSuffix(uri, "#")
	rest, ok := strings.CutPrefix(uri, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(uri, "http://")
	}
	if !ok {
		return false
	}
	switch rest {
	case "json-schema.org/draft-06/schema", "json-schema.org/draft-07/schema", "json-schema.org/draft/2019-09/schema":
		return true
	}
	return false
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
