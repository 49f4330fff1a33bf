package preflight

import "github.com/agentpreflight/preflight/strictjson"

// schemaUse says what a schema describes. It is the one place that decides
// which validator, and so which dialect, a schema gets.
type schemaUse uint8

const (
	// useCheckRequest: the schema of a /check-request (Check). The spec
	// fixes the twelve-keyword subset there: any other keyword is refused
	// (unsupported_schema_keyword), never ignored.
	useCheckRequest schemaUse = iota
	// useTool: the schema of a tool's payload (Operation.Schema, catalog
	// files). The full vocabulary of JSON Schema 2020-12, or of draft-07
	// (or 2019-09, draft-06) when $schema names it, with references only
	// within the document; annotation and unknown keywords are ignored.
	useTool
)

// payloadSchema is a compiled schema, of either validator.
type payloadSchema interface {
	// validate appends the failures of v (at JSON Pointer path) to errs,
	// or returns a limit_exceeded error when validating it needs more
	// work than one call may use.
	validate(v strictjson.Value, path string, errs *issueList) *Error
}

// compileFor compiles the schema v, found at JSON Pointer base, for use.
//
// A tool schema that fits the subset (with annotations) gets the subset's
// compiler and validator: they are the fast path, and in the subset the
// two validators agree keyword for keyword. Any other tool schema gets
// the full compiler, whose errors are the ones reported.
func compileFor(use schemaUse, v strictjson.Value, base string) (payloadSchema, *Error) {
	if use == useCheckRequest {
		s, err := compileCheckRequestSchema(v, base)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	c := schemaCompiler{base: base, annotations: true}
	s, serr := c.compile(v)
	if serr == nil {
		return s, nil
	}
	if v.Kind() != strictjson.Object {
		return nil, serr // a tool's arguments are an object: its schema must be one too
	}
	d, err := compileFullSchema(v, base)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// compileCheckRequestSchema is compileFor(useCheckRequest, ...) with the
// subset's concrete type, which Check's validator takes.
func compileCheckRequestSchema(v strictjson.Value, base string) (*schema, *Error) {
	return compileSchema(v, base)
}
