package mcpproxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Streamable HTTP server of the 2026-07-28 revision checks a request's
// HTTP headers against its body: Mcp-Protocol-Version against
// params._meta, Mcp-Name against the params it decodes, and each
// Mcp-Param-* header against the argument whose input-schema property
// names it (x-mcp-header). A stdio upstream sees no header, so the bridge
// answers these checks as such a server (the go-sdk's) does, where that
// server would: in the forwarding of the request, after the guard decided a
// call, so that a refusal is the call's outcome as through an HTTP upstream.
// (Mcp-Method and Mcp-Name are compared before, by checkHeaders, as for any
// upstream.)

// checkVersionHeader checks Mcp-Protocol-Version against the request: a call
// whose header names 2026-07-28 or later, or a request carrying the
// revision in params._meta, needs both, equal; and the params of
// tools/call, prompts/get and resources/read must decode as the revision
// defines them, for the server to read the name in them.
func checkVersionHeader(h http.Header, req *jsonrpc.Request) *jsonrpc.Error {
	header, meta := h.Get(hdrVersion), requestRevision(req.Params)
	if (req.IsCall() && header >= statelessRevision) || meta != "" {
		switch {
		case header == "":
			return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: hdrVersion + " header is required for requests carrying " + strconv.Quote(metaVersion)}
		case meta == "":
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing or invalid _meta field " + strconv.Quote(metaVersion)}
		case header != meta:
			return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match request %s %q", hdrVersion, header, metaVersion, meta)}
		}
	}
	if header < statelessRevision {
		return nil
	}
	var err error
	switch req.Method {
	case "tools/call":
		err = json.Unmarshal(req.Params, new(mcp.CallToolParams))
	case "prompts/get":
		err = json.Unmarshal(req.Params, new(mcp.GetPromptParams))
	case "resources/read":
		err = json.Unmarshal(req.Params, new(mcp.ReadResourceParams))
	}
	if err != nil {
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("failed to extract name from parameters for method %q", req.Method)}
	}
	return nil
}

// paramHeaders checks the Mcp-Param-* headers of a tools/call of the
// revision against its arguments, by the tool's input schema: every
// argument a property's x-mcp-header names, when present and not null,
// must come with that header, holding the same primitive value (plain, or
// "=?base64?…?=" encoded); an absent or null one must come without it.
func (br *bridge) paramHeaders(ctx context.Context, c *bridgeConn, h http.Header, req *jsonrpc.Request) *jsonrpc.Error {
	if req.Method != "tools/call" || h.Get(hdrVersion) < statelessRevision {
		return nil
	}
	var p struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return nil
	}
	schema, ok := br.schema(ctx, c, req.Params, p.Name)
	if !ok {
		return nil
	}
	for _, b := range headerBindings(schema) {
		name := "Mcp-Param-" + b.header
		got := h.Get(name)
		arg, present := argumentAt(p.Arguments, b.path)
		if !present || string(arg) == "null" {
			if got != "" {
				return mismatch("unexpected %s header for absent or null parameter %q", name, strings.Join(b.path, "."))
			}
			continue
		}
		if got == "" {
			return mismatch("missing %s header for parameter %q", name, strings.Join(b.path, "."))
		}
		value, ok := headerValue(got)
		if !ok {
			return mismatch("%s header contains invalid Base64 encoding", name)
		}
		want, ok := primitive(arg)
		if !ok {
			return mismatch("%s header present but body parameter %q is not a primitive type", name, strings.Join(b.path, "."))
		}
		if !samePrimitive(value, want) {
			return mismatch("%s header value '%s' does not match body value", name, got)
		}
	}
	return nil
}

func mismatch(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "header mismatch: " + fmt.Sprintf(format, args...)}
}

// schema returns the input schema of tool, listing the upstream's tools
// (every page, with the revision's _meta of params) when they are not
// known yet.
func (br *bridge) schema(ctx context.Context, c *bridgeConn, params json.RawMessage, tool string) (json.RawMessage, bool) {
	br.mu.Lock()
	schemas := br.schemas
	br.mu.Unlock()
	if schemas == nil {
		var cp struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		json.Unmarshal(params, &cp)
		meta := map[string]json.RawMessage{}
		for _, k := range []string{metaVersion, "io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/clientInfo"} {
			if v, ok := cp.Meta[k]; ok {
				meta[k] = v
			}
		}
		schemas = map[string]json.RawMessage{}
		cursor := ""
		for range 100 {
			lp := map[string]any{"_meta": meta}
			if cursor != "" {
				lp["cursor"] = cursor
			}
			res, err := c.roundTrip(ctx, "tools/list", c.params(mustJSON(lp), ""))
			if err != nil || res.Error != nil {
				return nil, false // not kept: the next call lists again
			}
			var page struct {
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			}
			json.Unmarshal(res.Result, &page)
			for _, t := range page.Tools {
				schemas[t.Name] = t.InputSchema
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		br.mu.Lock()
		br.schemas = schemas
		br.mu.Unlock()
	}
	s, ok := schemas[tool]
	return s, ok
}

// forgetTools drops the tools' schemas: the upstream's list changed.
func (br *bridge) forgetTools() {
	br.mu.Lock()
	br.schemas = nil
	br.mu.Unlock()
}

// binding is an argument, by its path in the arguments, that an
// x-mcp-header names.
type binding struct {
	path   []string
	header string
}

type schemaProperty struct {
	Header     json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]schemaProperty `json:"properties"`
}

// headerBindings returns the bindings of an input schema, nested
// properties included.
func headerBindings(schema json.RawMessage) []binding {
	var root schemaProperty
	if json.Unmarshal(schema, &root) != nil {
		return nil
	}
	var out []binding
	var walk func(props map[string]schemaProperty, prefix []string)
	walk = func(props map[string]schemaProperty, prefix []string) {
		for name, prop := range props {
			path := append(append([]string(nil), prefix...), name)
			var header string
			if json.Unmarshal(prop.Header, &header) == nil && header != "" {
				out = append(out, binding{path, header})
			}
			walk(prop.Properties, path)
		}
	}
	walk(root.Properties, nil)
	return out
}

// argumentAt returns the argument at path.
func argumentAt(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	var cur json.RawMessage
	obj := args
	for _, part := range path {
		v, ok := obj[part]
		if !ok {
			return nil, false
		}
		cur, obj = v, nil
		json.Unmarshal(v, &obj)
	}
	return cur, len(path) > 0
}

// headerValue decodes a header's value: "=?base64?…?=" is Base64.
func headerValue(v string) (string, bool) {
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			b, err := base64.StdEncoding.DecodeString(inner)
			return string(b), err == nil
		}
	}
	return v, true
}

// primitive returns a JSON string, boolean or safe integer, as a string,
// bool or int64.
func primitive(raw json.RawMessage) (any, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil, false
	}
	switch v := v.(type) {
	case string, bool:
		return v, true
	case float64:
		const safe = 1<<53 - 1
		if v != math.Trunc(v) || v > safe || v < -safe {
			return nil, false
		}
		return int64(v), true
	}
	return nil, false
}

// samePrimitive compares a header's decoded value with an argument's.
func samePrimitive(header string, arg any) bool {
	switch a := arg.(type) {
	case int64:
		// A safe integer takes at most 17 bytes plainly; a long spelling
		// is refused, as strconv.ParseFloat misreads text past 800 digits.
		if len(header) > 64 {
			return false
		}
		f, err := strconv.ParseFloat(header, 64)
		return err == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53-1 && int64(f) == a
	case bool:
		return header == strconv.FormatBool(a)
	case string:
		return header == a
	}
	return false
}
