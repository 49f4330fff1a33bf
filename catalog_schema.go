package preflight

import (
	"strings"

	"github.com/agentpreflight/preflight/strictjson"
)

// schemaDialect2020 is the $schema value of JSON Schema 2020-12, the
// dialect the supported subset belongs to.
const schemaDialect2020 = "https://json-schema.org/draft/2020-12/schema"

// ignoredAnnotation reports whether the keyword name (with value v) is an
// annotation that a catalog schema may carry and validation ignores. When
// it is not, msg is a more precise complaint than "not supported", or ""
// for the usual one.
//
// Annotations never constrain an instance, so ignoring them loses nothing;
// tool schemas from MCP servers, OpenAPI documents and LLM function
// definitions are full of them. A $schema naming 2019-09, draft-07 (what
// the TypeScript MCP SDK writes) or draft-06 is ignored too: the supported
// keywords mean the same there, and a form that differs (items as an
// array) fails on its own. A $schema naming another dialect is refused:
// its keywords could mean something else.
func ignoredAnnotation(name string, v strictjson.Value) (ok bool, msg string) {
	switch name {
	case "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly":
		return true, ""
	case "$schema":
		if v.Kind() == strictjson.String && sameMeaningDialect(v.Str()) {
			return true, ""
		}
		return false, "keyword \"$schema\" must name JSON Schema 2020-12 (" + schemaDialect2020 + "), 2019-09, draft-07 or draft-06, found " + echoJSON(v)
	}
	return false, ""
}

// sameMeaningDialect reports whether uri names 2020-12, 2019-09, draft-07
// or draft-06 (http or https, with or without a trailing '#'): the
// dialects in which the supported keywords mean what they mean in
// 2020-12. It is the rule MCP tools' input schemas are read by too.
func sameMeaningDialect(uri string) bool {
	if uri == schemaDialect2020 || uri == schemaDialect2020+"#" {
		return true
	}
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
