package preflight

import "github.com/agentpreflight/preflight/strictjson"

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
// definitions are full of them. A $schema naming another dialect is
// refused: its keywords could mean something else.
func ignoredAnnotation(name string, v strictjson.Value) (ok bool, msg string) {
	switch name {
	case "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly":
		return true, ""
	case "$schema":
		if v.Kind() == strictjson.String && (v.Str() == schemaDialect2020 || v.Str() == schemaDialect2020+"#") {
			return true, ""
		}
		return false, "keyword \"$schema\" must name JSON Schema 2020-12 (" + schemaDialect2020 + "), found " + echoJSON(v)
	}
	return false, ""
}
