package preflight

import "github.com/agentpreflight/preflight/strictjson"

// compileOperationSchemaAssertingFormat is compileOperationSchema for an
// operation with AssertFormat: the same checks and errors, then the
// schema compiled by the full validator with format asserted (the subset's
// fast path takes format as an annotation only).
func compileOperationSchemaAssertingFormat(text []byte, base string) (payloadSchema, *Error) {
	s, err := compileOperationSchema(text, base)
	if err != nil {
		return nil, err
	}
	v, perr := strictjson.Parse(text, strictjson.Limits{MaxDepth: maxCheckDepth})
	if perr != nil || v.Kind() != strictjson.Object {
		return s, nil // only an object holds a format to assert
	}
	d, err := compileFullSchemaWith(v, base, true)
	if err != nil {
		return nil, err
	}
	return d, nil
}
