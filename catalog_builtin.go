package preflight

import "encoding/json"

// The built-in operations: the two the specification defines. Their
// payload rules are schemas in the subset, run by the same validator as
// Check, plus the absolute-URL rule of browse.
var builtinOperations = []Operation{
	{
		Provider: "search",
		Name:     "web_search",
		Aliases:  []string{"search:web_search"},
		Schema: json.RawMessage(`{"type":"object","required":["query"],` +
			`"properties":{"query":{"type":"string","minLength":1,"maxLength":500},` +
			`"max_results":{"type":"integer","minimum":1,"maximum":10}},` +
			`"additionalProperties":false}`),
		Effects: EffectsReadOnly,
	},
	{
		Provider: "browse",
		Name:     "fetch",
		Aliases:  []string{"browse:fetch"},
		Schema: json.RawMessage(`{"type":"object","required":["url"],` +
			`"properties":{"url":{"type":"string"}},"additionalProperties":false}`),
		Effects:    EffectsReadOnly,
		URLMembers: []string{"url"},
	},
}

// defaultCatalog is the catalog of the package-level Decide.
var defaultCatalog = mustCatalog(builtinOperations)

func mustCatalog(ops []Operation) *Catalog {
	c, err := newCatalog(ops, "", 0)
	if err != nil {
		panic("preflight: built-in catalog: " + err.Error())
	}
	return c
}

// DefaultCatalog returns the catalog that the package-level [Decide] uses:
// provider "search" with operation "web_search" (alias
// "search:web_search") and provider "browse" with "fetch" (alias
// "browse:fetch"), both read-only. The browse payload's url must be an
// absolute http(s) URL with a host, a rule no schema keyword expresses
// (see [Operation.URLMembers]).
func DefaultCatalog() *Catalog { return defaultCatalog }
