package server

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/agentpreflight/preflight"
)

// operationsSchema is the JSON Schema of the catalog file preflightd
// --operations reads, served for editors.
//
//go:embed schemas/operations.json
var operationsSchema []byte

const pathOperationsSchema = "/schemas/operations.json"

// serveOperationsSchema answers GET /schemas/operations.json.
func serveOperationsSchema(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, operationsSchema)
}

// operationName is "provider/name".
func operationName(op preflight.Operation) string { return op.Provider + "/" + op.Name }

// effectsOf is the resolved effects of op, as catalog files name them.
func effectsOf(c *preflight.Catalog, op preflight.Operation) string {
	e, _ := c.EffectsOf(op.Provider, op.Name)
	return e.String()
}

// operationsMarkdown is the section of the guide and the llms files that
// lists a configured catalog.
func operationsMarkdown(c *preflight.Catalog) string {
	var b strings.Builder
	b.WriteString("\n\n## Operations decided by this server\n\n")
	b.WriteString("The operator configured these operations for `POST {base_url}/v0.2/preflight/tool-call` and the " +
		"`preflight_tool_call` MCP tool. Any other provider/operation is answered with `advise` / `UNSUPPORTED_OPERATION`. " +
		"Effects are the operator's setting or the tool author's MCP annotations (claims, not verified): only a " +
		"`read_only` operation is ever reused; a `destructive` one is blocked after its first terminal failure. " +
		"A payload that breaks its schema is a `block` / `INVALID_PAYLOAD` whose issues point under `/tool/request`. " +
		"The catalog file format is described by `{base_url}/schemas/operations.json`.\n\n")
	b.WriteString("| provider | operation | aliases | effects | payload schema |\n|---|---|---|---|---|\n")
	for _, op := range c.Operations() {
		schema := "any JSON object"
		if op.Schema != nil {
			var compact bytes.Buffer
			if json.Compact(&compact, op.Schema) == nil {
				schema = "`" + strings.ReplaceAll(compact.String(), "|", `\|`) + "`"
			}
		}
		aliases := "—"
		if len(op.Aliases) > 0 {
			aliases = "`" + strings.Join(op.Aliases, "`, `") + "`"
		}
		b.WriteString("| `" + op.Provider + "` | `" + op.Name + "` | " + aliases + " | " + effectsOf(c, op) + " | " + schema + " |\n")
	}
	return b.String()
}

// operationsDescription is the paragraph the preflight_tool_call tool
// description gets for a configured catalog; "" for nil.
func operationsDescription(c *preflight.Catalog) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nOperations this server decides (tool.provider/tool.operation, effects, payload schema); any other gets UNSUPPORTED_OPERATION:")
	for _, op := range c.Operations() {
		b.WriteString("\n- " + operationName(op))
		if len(op.Aliases) > 0 {
			b.WriteString(" (also " + strings.Join(op.Aliases, ", ") + ")")
		}
		b.WriteString(", " + effectsOf(c, op) + ": ")
		var compact bytes.Buffer
		if op.Schema == nil || json.Compact(&compact, op.Schema) != nil {
			b.WriteString("any JSON object")
		} else {
			b.Write(compact.Bytes())
		}
	}
	return b.String()
}

// toolCallTitle is the preflight_tool_call tool's title: the built-in
// operations', or those of a configured catalog.
func toolCallTitle(c *preflight.Catalog) string {
	if c == nil {
		return "Decide whether a search or fetch tool call is worth making"
	}
	var names []string
	for _, op := range c.Operations() {
		names = append(names, op.Name)
	}
	if len(names) > 3 {
		names = append(names[:3], "…")
	}
	return "Decide whether a tool call is worth making: " + strings.Join(names, ", ")
}

// toolCallDescription is the preflight_tool_call tool's description; with
// a configured catalog it leads with the catalog's operations.
func toolCallDescription(c *preflight.Catalog) string {
	if c == nil {
		return mcpToolCallDescription
	}
	return "Decide whether a proposed call of one of the operations below is worth making, before you make it and spend money on it." +
		operationsDescription(c) + "\n\n" +
		"Send the call (tool.provider and tool.operation as listed, tool.request the exact payload), " + mcpToolCallBody
}

// openAPIFor returns the OpenAPI document; for a configured catalog, the
// ToolCall schema's descriptions name its operations and the document
// carries them, with their payload schemas, in x-preflight-operations.
func openAPIFor(c *preflight.Catalog) []byte {
	if c == nil {
		return openAPIDocument
	}
	doc := decodeDocument(openAPIDocument)
	type listed struct {
		Provider      string          `json:"provider"`
		Operation     string          `json:"operation"`
		Aliases       []string        `json:"aliases,omitempty"`
		Effects       string          `json:"effects"`
		PayloadSchema json.RawMessage `json:"payloadSchema,omitempty"`
	}
	var ops []listed
	for _, op := range c.Operations() {
		ops = append(ops, listed{op.Provider, op.Name, op.Aliases, effectsOf(c, op), op.Schema})
	}
	doc["x-preflight-operations"] = ops
	if props, ok := dig(doc, "components", "schemas", "ToolCall", "properties"); ok {
		describeOperations(props, c, "each operation's payload schema is in x-preflight-operations")
	}
	return encodeDocument(doc)
}

// toolCallInputSchema is the input schema of preflight_tool_call: as
// written for the built-in catalog; for a configured one, with the tool's
// descriptions naming its operations and no built-in payload members.
func toolCallInputSchema(c *preflight.Catalog) json.RawMessage {
	if c == nil {
		return mcpToolCallInputSchema
	}
	doc := decodeDocument(mcpToolCallInputSchema)
	if props, ok := dig(doc, "properties", "tool", "properties"); ok {
		describeOperations(props, c, "each operation's payload schema is in this tool's description")
	}
	return encodeDocument(doc)
}

// describeOperations rewrites the provider, operation and request members
// of a ToolCall schema's properties for catalog c. The request becomes any
// object: the payload members of search and browse do not apply to the
// other operations.
func describeOperations(props map[string]any, c *preflight.Catalog, where string) {
	var providers, names []string
	for _, op := range c.Operations() {
		if !slices.Contains(providers, "`"+op.Provider+"`") {
			providers = append(providers, "`"+op.Provider+"`")
		}
		n := "`" + op.Name + "`"
		for _, a := range op.Aliases {
			n += " or `" + a + "`"
		}
		names = append(names, n+" ("+op.Provider+")")
	}
	if p, ok := props["provider"].(map[string]any); ok {
		p["description"] = "Configured on this server: " + strings.Join(providers, ", ") + ". Others are answered with advise/UNSUPPORTED_OPERATION."
	}
	if p, ok := props["operation"].(map[string]any); ok {
		p["description"] = "Configured on this server: " + strings.Join(names, "; ") + "."
	}
	props["request"] = map[string]any{
		"type": "object",
		"description": "The provider payload, exactly as you would send it; " + where +
			". A payload that breaks its schema gets decision block with INVALID_PAYLOAD and issues under /tool/request, not an error.",
	}
}

// decodeDocument decodes one of the embedded JSON documents, numbers kept
// as written.
func decodeDocument(data []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		panic("server: an embedded document is not JSON: " + err.Error())
	}
	return doc
}

func encodeDocument(doc map[string]any) []byte {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		panic("server: a document cannot be encoded: " + err.Error())
	}
	return out.Bytes()
}

// dig walks nested objects of a decoded document.
func dig(doc map[string]any, keys ...string) (map[string]any, bool) {
	cur := doc
	for _, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}
