package preflight

// The full JSON Schema validator for the schemas that describe tools
// (Operation.Schema, catalog files): every keyword of 2020-12 and of
// draft-07, chosen by $schema. It lives in three files:
//
//   - fullschema.go (this file): the compiled form and the compiler.
//   - fullschema_validate.go: the validator.
//   - schema_dialect.go: the one place that decides which validator a
//     schema gets (the twelve-keyword subset for /check-request; for a
//     tool, the subset's fast compiler when the schema fits it, else this).
//
// References are resolved only within the document: a $ref or
// $dynamicRef to anything else is a compile error, never a fetch.

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/internal/pattern"
	"github.com/agentpreflight/preflight/strictjson"
)

// Limits of the full compiler. Validation shares maxValidationWork with
// the subset's validator.
const (
	// maxFullSubschemas bounds the subschemas of one document. A 32 KiB
	// document of empty schemas holds about 10,000; real tool schemas a
	// few hundred at most (a subschema is rarely under 15 bytes).
	maxFullSubschemas = 5000
	// maxFullEvalDepth bounds how deeply evaluation may nest: the depth of
	// the instance plus the applicators and references taken on the way.
	// Only a reference cycle that never descends into the value reaches it.
	maxFullEvalDepth = 2000
)

// jsonDialect is the dialect a schema resource is read in.
type jsonDialect uint8

const (
	dialect2020 jsonDialect = iota // JSON Schema 2020-12 (the default)
	dialect2019                    // 2019-09: 2020-12 with items as an array and additionalItems
	dialect7                       // draft-07 and draft-06: $ref overrides its siblings, definitions, dependencies
)

// dialectOf maps a $schema URI to its dialect.
func dialectOf(uri string) (jsonDialect, bool) {
	u := strings.TrimSuffix(uri, "#")
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		rest, ok = strings.CutPrefix(u, "http://")
	}
	if !ok {
		return 0, false
	}
	switch rest {
	case "json-schema.org/draft/2020-12/schema":
		return dialect2020, true
	case "json-schema.org/draft/2019-09/schema":
		return dialect2019, true
	case "json-schema.org/draft-07/schema", "json-schema.org/draft-06/schema":
		return dialect7, true
	}
	return 0, false
}

// fullSchema is one compiled subschema of the full validator. Absent
// numeric keywords hold -1; absent schemas nil.
type fullSchema struct {
	kind    schemaKind
	loc     string // JSON Pointer of the subschema (under the compiler's base)
	res     *fullResource
	dialect jsonDialect

	ref, dynRef         *fullSchema
	refText, dynRefText string
	dynName             string // the anchor name of a $dynamicRef that may resolve dynamically

	types     typeSet
	typeValue strictjson.Value
	enum      strictjson.Value // invalid: none
	constant  strictjson.Value
	hasConst  bool

	minimum, maximum, exclMin, exclMax *decimal.Number
	multipleOf                         string

	minLength, maxLength int
	pattern              *pattern.Pattern
	patternIndex         int
	format               string            // the format asserted, with its checker
	formatCheck          func(string) bool // nil: format not asserted

	minItems, maxItems       int
	uniqueItems              bool
	minContains, maxContains int
	minProps, maxProps       int

	required    []string
	depRequired []fullDepRequired
	depSchemas  []fullProp
	props       []fullProp
	propIndex   map[string]int // name → index in props, when there are many
	patProps    []fullPatProp
	additional  *fullSchema
	propNames   *fullSchema
	prefix      []*fullSchema
	items       *fullSchema // items after prefix (additionalItems in the array form)
	contains    *fullSchema
	allOf       []*fullSchema
	anyOf       []*fullSchema
	oneOf       []*fullSchema
	not         *fullSchema
	ifS         *fullSchema
	thenS       *fullSchema
	elseS       *fullSchema
	unevalProps *fullSchema
	unevalItems *fullSchema
	// needsAnn: the subschema has unevaluatedProperties or unevaluatedItems,
	// so its applicators must report what they evaluated.
	needsAnn bool
}

type fullProp struct {
	name   string
	schema *fullSchema
}

type fullPatProp struct {
	re     *pattern.Pattern
	index  int
	schema *fullSchema
}

type fullDepRequired struct {
	name     string
	required []string
}

// fullResource is a schema resource: the document root or a subschema
// with $id. Its dynamic anchors serve $dynamicRef.
type fullResource struct {
	uri        string // absolute, without fragment
	ptr        string // document pointer of its root (relative to the document)
	dialect    jsonDialect
	dynAnchors map[string]string // name → document pointer
}

// fullDoc is a compiled tool schema.
type fullDoc struct {
	root     *fullSchema
	patterns int // distinct patterns, for the validator's matcher states
	nodes    map[string]*fullSchema
	// shared: the document is kept in the cache of compiled schemas, so
	// its patterns keep warm matchers (pattern.Pattern.MatchBudgetShared).
	shared bool
}

// pendingRef is a $ref or $dynamicRef to resolve once the document is
// compiled.
type pendingRef struct {
	from    *fullSchema
	text    string
	base    *url.URL
	dynamic bool
}

// fullCompiler compiles one document.
type fullCompiler struct {
	base      string // JSON Pointer of the document
	doc       strictjson.Value
	issues    []Issue
	nodes     map[string]*fullSchema   // by document pointer
	resources map[string]*fullResource // by absolute URI without fragment
	anchors   map[string]string        // absolute URI with plain-name fragment → document pointer
	pending   []pendingRef
	count     int
	// assertFormat makes format an assertion for the formats of
	// formatCheckers (by default it is an annotation).
	assertFormat bool

	patterns     map[string]fullPatternEntry
	patternInsts int
	classRanges  int
}

type fullPatternEntry struct {
	re    *pattern.Pattern
	index int
}

// defaultBaseURI is the base of a document without $id. It names no real
// place, so a relative $ref that leaves the document is refused like any
// other remote one.
const defaultBaseURI = "urn:preflight:schema"

// compileFullSchema compiles the tool schema v, found at JSON Pointer base,
// in the dialect its $schema names (2020-12 when absent). Problems are
// reported as compileSchema reports them.
func compileFullSchema(v strictjson.Value, base string) (*fullDoc, *Error) {
	return compileFullSchemaWith(v, base, false)
}

// compileFullSchemaWith is compileFullSchema, with format asserted for
// the formats of formatCheckers when assertFormat is set.
func compileFullSchemaWith(v strictjson.Value, base string, assertFormat bool) (*fullDoc, *Error) {
	c := fullCompiler{base: base, doc: v, nodes: map[string]*fullSchema{},
		resources: map[string]*fullResource{}, anchors: map[string]string{}, assertFormat: assertFormat}
	if v.Kind() != strictjson.Object && v.Kind() != strictjson.Bool {
		c.failAt("", IssueInvalidSchema, "expected the schema to be a JSON object, found "+v.Kind().String())
		return nil, issuesError(c.issues)
	}
	dialect := dialect2020
	if v.Kind() == strictjson.Object {
		if sv, ok := v.Get("$schema"); ok {
			d, ok := dialectOf(sv.Str())
			if sv.Kind() != strictjson.String || !ok {
				c.failAt("/$schema", IssueUnsupportedSchemaKeyword, "keyword \"$schema\" must name JSON Schema 2020-12 ("+
					schemaDialect2020+"), 2019-09, draft-07 or draft-06, found "+echoJSON(sv))
				return nil, issuesError(c.issues)
			}
			dialect = d
		}
	}
	rootURL, _ := url.Parse(defaultBaseURI)
	root := c.compileAt(v, "", rootURL, dialect, nil)
	c.resolve()
	if len(c.issues) > 0 {
		return nil, issuesError(c.issues)
	}
	return &fullDoc{root: root, patterns: len(c.patterns), nodes: c.nodes}, nil
}

func (c *fullCompiler) failAt(ptr string, code IssueCode, msg string) {
	c.issues = append(c.issues, Issue{Path: c.base + ptr, Code: code, Message: msg})
}

// compileAt compiles the value v at document pointer ptr, with base URI
// base, in dialect d, inside resource res (nil for the document root).
// A location is compiled once; a reference to it shares the node.
func (c *fullCompiler) compileAt(v strictjson.Value, ptr string, base *url.URL, d jsonDialect, res *fullResource) *fullSchema {
	if n, ok := c.nodes[ptr]; ok {
		return n
	}
	c.count++
	if c.count == maxFullSubschemas+1 {
		c.failAt(ptr, IssueMaxNodes, "the schema has more than "+strconv.Itoa(maxFullSubschemas)+" subschemas, the most allowed")
	}
	if c.count > maxFullSubschemas {
		return schemaTrue2
	}
	n := &fullSchema{loc: ptr, res: res, dialect: d, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1,
		minContains: -1, maxContains: -1, minProps: -1, maxProps: -1}
	c.nodes[ptr] = n
	switch v.Kind() {
	case strictjson.Bool:
		n.kind = falseSchema
		if v.Bool() {
			n.kind = trueSchema
		}
		if res == nil {
			n.res = c.rootResource(base, ptr, d)
		}
		return n
	case strictjson.Object:
	default:
		c.failAt(ptr, IssueInvalidSchema, "expected a schema (an object or a boolean), found "+v.Kind().String())
		n.kind = trueSchema
		return n
	}
	_, hasRef := v.Get("$ref")
	refOnly := d == dialect7 && hasRef // draft-07: $ref overrides every sibling, $id included
	// $schema on an embedded resource changes the dialect of its subtree.
	if idv, ok := v.Get("$id"); ok && !refOnly && idv.Kind() == strictjson.String {
		if sv, ok := v.Get("$schema"); ok && ptr != "" {
			if nd, ok := dialectOf(sv.Str()); ok && sv.Kind() == strictjson.String {
				d, n.dialect = nd, nd
			}
		}
	}
	// Identify the resource: $id (or id fragment in draft-07) first.
	if idv, ok := v.Get("$id"); ok && !refOnly {
		if idv.Kind() != strictjson.String {
			c.failAt(ptr+"/$id", IssueInvalidSchema, "expected a URI reference string, found "+idv.Kind().String())
		} else if u, err := url.Parse(idv.Str()); err != nil {
			c.failAt(ptr+"/$id", IssueInvalidSchema, "expected a URI reference, found "+echoQuote(idv.Str()))
		} else {
			abs := base.ResolveReference(u)
			if d == dialect7 && u.Fragment != "" && u.Scheme == "" && u.Host == "" && u.Path == "" {
				// draft-07 "#name": a plain-name anchor, not a new base.
				c.anchors[withFragment(base, u.Fragment)] = ptr
			} else {
				frag := abs.Fragment
				abs.Fragment, abs.RawFragment = "", ""
				base = abs
				res = c.newResource(base, ptr, d)
				n.res = res
				if frag != "" && d == dialect7 {
					c.anchors[withFragment(base, frag)] = ptr
				}
			}
		}
	}
	if res == nil {
		res = c.rootResource(base, ptr, d)
		n.res = res
	}
	n.res = res
	if !refOnly && d != dialect7 {
		if av, ok := v.Get("$anchor"); ok && av.Kind() == strictjson.String {
			c.anchors[withFragment(base, av.Str())] = ptr
		}
		if av, ok := v.Get("$dynamicAnchor"); ok && av.Kind() == strictjson.String {
			c.anchors[withFragment(base, av.Str())] = ptr
			res.dynAnchors[av.Str()] = ptr
		}
	}
	for it := v.Iter(); it.Next(); {
		m := it.Member()
		if refOnly && m.Key != "$ref" && m.Key != "definitions" {
			continue
		}
		c.keyword(n, m.Key, m.Value, ptr+"/"+strictjson.EscapePointerToken(m.Key), base, d, res)
	}
	// OpenAPI 3.0's "nullable": true, which tool schemas converted from
	// OpenAPI still carry, means null is allowed too. It is not JSON
	// Schema (an unknown keyword, ignored), but ignoring it would block
	// calls the tool accepts: it widens type, never narrows anything.
	if nv, ok := v.Get("nullable"); ok && nv.Kind() == strictjson.Bool && nv.Bool() && n.types != 0 {
		n.types |= typeNull
	}
	if n.contains != nil && n.minContains < 0 {
		n.minContains = 1
	}
	n.needsAnn = n.unevalProps != nil || n.unevalItems != nil
	return n
}

// schemaTrue2 stands in for subschemas past the count limit, which has
// already failed the document.
var schemaTrue2 = &fullSchema{kind: trueSchema}

func withFragment(base *url.URL, frag string) string {
	u := *base
	u.Fragment, u.RawFragment = "", ""
	return u.String() + "#" + frag
}

func (c *fullCompiler) newResource(base *url.URL, ptr string, d jsonDialect) *fullResource {
	r := &fullResource{uri: base.String(), ptr: ptr, dialect: d, dynAnchors: map[string]string{}}
	if _, dup := c.resources[r.uri]; !dup {
		c.resources[r.uri] = r
	}
	return r
}

// rootResource returns the resource of the document root, making it on
// first use.
func (c *fullCompiler) rootResource(base *url.URL, ptr string, d jsonDialect) *fullResource {
	if r, ok := c.resources[base.String()]; ok {
		return r
	}
	return c.newResource(base, ptr, d)
}

// keyword compiles one member of the object schema n.
func (c *fullCompiler) keyword(n *fullSchema, key string, v strictjson.Value, at string, base *url.URL, d jsonDialect, res *fullResource) {
	sub := func(val strictjson.Value, p string) *fullSchema { return c.compileAt(val, p, base, d, res) }
	subList := func(val strictjson.Value) []*fullSchema {
		if val.Kind() != strictjson.Array || val.Len() == 0 {
			c.failAt(at, IssueInvalidSchema, "expected a non-empty array of schemas, found "+echoJSON(val))
			return nil
		}
		out := make([]*fullSchema, 0, val.Len())
		for it := val.Iter(); it.Next(); {
			out = append(out, sub(it.Value(), at+"/"+strconv.Itoa(it.Index())))
		}
		return out
	}
	subMap := func(val strictjson.Value) []fullProp {
		if val.Kind() != strictjson.Object {
			c.failAt(at, IssueInvalidSchema, "expected an object mapping names to schemas, found "+val.Kind().String())
			return nil
		}
		out := make([]fullProp, 0, val.Len())
		for it := val.Iter(); it.Next(); {
			out = append(out, fullProp{it.Key(), sub(it.Value(), at+"/"+strictjson.EscapePointerToken(it.Key()))})
		}
		return out
	}
	count := func() int {
		k, ok := schemaLengthLimit(v)
		if !ok {
			c.failAt(at, IssueInvalidSchema, "expected a non-negative integer, found "+echoJSON(v))
			return -1
		}
		return int(k)
	}
	number := func() *decimal.Number {
		if v.Kind() != strictjson.Number {
			c.failAt(at, IssueInvalidSchema, "expected a number, found "+v.Kind().String())
			return nil
		}
		x := decimal.ParseNumber(v.Str())
		return &x
	}
	v2020 := d != dialect7
	switch key {
	case "$ref":
		if v.Kind() != strictjson.String {
			c.failAt(at, IssueInvalidSchema, "expected a URI reference string, found "+v.Kind().String())
			return
		}
		n.refText = v.Str()
		c.pending = append(c.pending, pendingRef{from: n, text: v.Str(), base: base})
	case "$dynamicRef":
		if d != dialect2020 {
			return
		}
		if v.Kind() != strictjson.String {
			c.failAt(at, IssueInvalidSchema, "expected a URI reference string, found "+v.Kind().String())
			return
		}
		n.dynRefText = v.Str()
		c.pending = append(c.pending, pendingRef{from: n, text: v.Str(), base: base, dynamic: true})
	case "$recursiveRef":
		if d == dialect2019 {
			c.failAt(at, IssueUnsupportedSchemaKeyword, "keyword \"$recursiveRef\" (2019-09) is not supported; use 2020-12's $dynamicRef")
		}
	case "$defs":
		if v2020 {
			subMap(v)
		}
	case "definitions":
		if !v2020 {
			subMap(v)
		}
	case "type":
		var tmp schema
		sc := schemaCompiler{base: c.base}
		sc.compileType(&tmp, v, &frame{name: strings.TrimPrefix(at, "/"), index: -1})
		if len(sc.issues) > 0 {
			c.failAt(at, IssueInvalidSchema, sc.issues[0].Message)
			return
		}
		n.types, n.typeValue = tmp.types, tmp.typeValue
	case "enum":
		if v.Kind() != strictjson.Array {
			c.failAt(at, IssueInvalidSchema, "expected an array of allowed values, found "+v.Kind().String())
			return
		}
		n.enum = v
	case "const":
		n.constant, n.hasConst = v, true
	case "minimum":
		n.minimum = number()
	case "maximum":
		n.maximum = number()
	case "exclusiveMinimum":
		n.exclMin = number()
	case "exclusiveMaximum":
		n.exclMax = number()
	case "multipleOf":
		if v.Kind() != strictjson.Number || decimal.Compare(v.Str(), "0") <= 0 {
			c.failAt(at, IssueInvalidSchema, "expected a number greater than 0, found "+echoJSON(v))
			return
		}
		n.multipleOf = v.Str()
	case "minLength":
		n.minLength = count()
	case "maxLength":
		n.maxLength = count()
	case "pattern":
		n.pattern, n.patternIndex = c.compilePattern(v, at)
	case "minItems":
		n.minItems = count()
	case "maxItems":
		n.maxItems = count()
	case "uniqueItems":
		if v.Kind() != strictjson.Bool {
			c.failAt(at, IssueInvalidSchema, "expected a boolean, found "+v.Kind().String())
			return
		}
		n.uniqueItems = v.Bool()
	case "minContains":
		if v2020 {
			n.minContains = count()
		}
	case "maxContains":
		if v2020 {
			n.maxContains = count()
		}
	case "minProperties":
		n.minProps = count()
	case "maxProperties":
		n.maxProps = count()
	case "required":
		n.required = c.names(v, at)
	case "dependentRequired":
		if !v2020 {
			return
		}
		if v.Kind() != strictjson.Object {
			c.failAt(at, IssueInvalidSchema, "expected an object mapping names to arrays of names, found "+v.Kind().String())
			return
		}
		for it := v.Iter(); it.Next(); {
			n.depRequired = append(n.depRequired, fullDepRequired{it.Key(), c.names(it.Value(), at+"/"+strictjson.EscapePointerToken(it.Key()))})
		}
	case "dependentSchemas":
		if v2020 {
			n.depSchemas = subMap(v)
		}
	case "dependencies":
		// draft-07's keyword, which 2020-12 split in two; honoured there
		// too, as the suite's optional compatibility tests expect and as
		// older generators still write it.
		if v.Kind() != strictjson.Object {
			c.failAt(at, IssueInvalidSchema, "expected an object mapping names to schemas or arrays of names, found "+v.Kind().String())
			return
		}
		for it := v.Iter(); it.Next(); {
			p := at + "/" + strictjson.EscapePointerToken(it.Key())
			if it.Value().Kind() == strictjson.Array {
				n.depRequired = append(n.depRequired, fullDepRequired{it.Key(), c.names(it.Value(), p)})
			} else {
				n.depSchemas = append(n.depSchemas, fullProp{it.Key(), sub(it.Value(), p)})
			}
		}
	case "properties":
		n.props = subMap(v)
		if len(n.props) > schemaLinearScan {
			n.propIndex = make(map[string]int, len(n.props))
			for i, p := range n.props {
				n.propIndex[p.name] = i
			}
		}
	case "patternProperties":
		if v.Kind() != strictjson.Object {
			c.failAt(at, IssueInvalidSchema, "expected an object mapping patterns to schemas, found "+v.Kind().String())
			return
		}
		for it := v.Iter(); it.Next(); {
			p := at + "/" + strictjson.EscapePointerToken(it.Key())
			re, idx := c.compilePatternText(it.Key(), p)
			s := sub(it.Value(), p)
			if re != nil {
				n.patProps = append(n.patProps, fullPatProp{re, idx, s})
			}
		}
	case "additionalProperties":
		n.additional = sub(v, at)
	case "propertyNames":
		n.propNames = sub(v, at)
	case "prefixItems":
		if v2020 {
			n.prefix = subList(v)
		}
	case "items":
		if v.Kind() == strictjson.Array && d != dialect2020 {
			n.prefix = make([]*fullSchema, 0, v.Len())
			for it := v.Iter(); it.Next(); {
				n.prefix = append(n.prefix, sub(it.Value(), at+"/"+strconv.Itoa(it.Index())))
			}
			return
		}
		if v.Kind() == strictjson.Array {
			c.failAt(at, IssueInvalidSchema, `the array form of "items" belongs to draft-07 and 2019-09; in 2020-12 use "prefixItems"`)
			return
		}
		n.items = sub(v, at)
	case "additionalItems":
		if d == dialect2020 {
			return
		}
		// Meaningful only beside the array form of items.
		if iv, _ := c.parentValue(n).Get("items"); iv.IsValid() && iv.Kind() == strictjson.Array {
			n.items = sub(v, at)
		} else {
			sub(v, at)
		}
	case "contains":
		n.contains = sub(v, at)
	case "allOf":
		n.allOf = subList(v)
	case "anyOf":
		n.anyOf = subList(v)
	case "oneOf":
		n.oneOf = subList(v)
	case "not":
		n.not = sub(v, at)
	case "if":
		n.ifS = sub(v, at)
	case "then":
		n.thenS = sub(v, at)
	case "else":
		n.elseS = sub(v, at)
	case "unevaluatedProperties":
		if v2020 {
			n.unevalProps = sub(v, at)
		}
	case "unevaluatedItems":
		if v2020 {
			n.unevalItems = sub(v, at)
		}
	case "format":
		if c.assertFormat && v.Kind() == strictjson.String {
			n.format, n.formatCheck = v.Str(), formatCheckers[v.Str()]
		}
	case "contentEncoding", "contentMediaType", "$id", "$schema", "$anchor", "$dynamicAnchor",
		"$vocabulary", "$comment", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly":
		// Annotations (format too, by default), or handled above.
	case "contentSchema":
		if v2020 {
			sub(v, at) // an annotation; compiled so that a reference into it resolves
		}
	default:
		// An unknown keyword is an annotation (2020-12 §4.3.1); its value
		// is not a schema, and no $id in it names a resource.
	}
}

// parentValue returns the JSON value of n's location in the document.
func (c *fullCompiler) parentValue(n *fullSchema) strictjson.Value {
	v, _ := pointerValue(c.doc, n.loc)
	return v
}

// names reads an array of unique property names.
func (c *fullCompiler) names(v strictjson.Value, at string) []string {
	const want = "expected an array of unique property names (strings)"
	if v.Kind() != strictjson.Array {
		c.failAt(at, IssueInvalidSchema, want+", found "+v.Kind().String())
		return nil
	}
	out := make([]string, 0, v.Len())
	for it := v.Iter(); it.Next(); {
		if it.Value().Kind() != strictjson.String {
			c.failAt(at, IssueInvalidSchema, want+", found "+it.Value().Kind().String()+" at index "+strconv.Itoa(it.Index()))
			return nil
		}
		out = append(out, it.Value().Str())
	}
	if dup, ok := firstDuplicateName(out); ok {
		c.failAt(at, IssueInvalidSchema, want+", found "+echoQuote(dup)+" twice")
		return nil
	}
	return out
}

func (c *fullCompiler) compilePattern(v strictjson.Value, at string) (*pattern.Pattern, int) {
	if v.Kind() != strictjson.String {
		c.failAt(at, IssueInvalidSchema, "expected a regular expression string, found "+v.Kind().String())
		return nil, 0
	}
	return c.compilePatternText(v.Str(), at)
}

// compilePatternText compiles an ECMA-262 pattern under the same limits as
// the subset's compiler, sharing the program of a repeated pattern.
func (c *fullCompiler) compilePatternText(src, at string) (*pattern.Pattern, int) {
	if p, ok := c.patterns[src]; ok {
		return p.re, p.index
	}
	room := min(maxPatternInsts, maxSchemaPatternInsts-c.patternInsts)
	re, size, ranges, err := pattern.CompileWithin(src, room, maxSchemaClassRanges-c.classRanges)
	c.classRanges += ranges
	pe, _ := err.(*pattern.Error)
	switch {
	case pe != nil && pe.OverRanges:
		c.failAt(at, IssueUnsupportedPattern, "the schema's patterns hold more than "+strconv.Itoa(maxSchemaClassRanges)+
			" character-class ranges together (the limit was reached at "+pieceAt(pe)+"); use fewer or smaller classes")
		return nil, 0
	case pe != nil && pe.OverSize:
		c.failAt(at, IssueUnsupportedPattern, "the schema's patterns expand to more than "+strconv.Itoa(maxSchemaPatternInsts)+
			" instructions together, or this one to more than "+strconv.Itoa(maxPatternInsts)+" (the limit was reached at "+pieceAt(pe)+"); use fewer or smaller patterns")
		return nil, 0
	case err != nil:
		c.failAt(at, IssueUnsupportedPattern, patternReason(err))
		return nil, 0
	}
	c.patternInsts += size
	if c.patterns == nil {
		c.patterns = map[string]fullPatternEntry{}
	}
	e := fullPatternEntry{re, len(c.patterns)}
	c.patterns[src] = e
	return e.re, e.index
}

// resolve links every $ref and $dynamicRef, compiling on demand a target
// that no keyword compiled (a pointer into an unknown keyword).
func (c *fullCompiler) resolve() {
	for i := 0; i < len(c.pending); i++ {
		p := c.pending[i]
		kw := "/$ref"
		if p.dynamic {
			kw = "/$dynamicRef"
		}
		target, msg := c.lookup(p.text, p.base)
		if target == nil {
			c.failAt(p.from.loc+kw, IssueUnsupportedSchemaKeyword, msg)
			continue
		}
		if !p.dynamic {
			p.from.ref = target
			continue
		}
		p.from.dynRef = target
		if u, err := url.Parse(p.text); err == nil && u.Fragment != "" && !strings.HasPrefix(u.Fragment, "/") {
			// Dynamic only when the initial target has a matching $dynamicAnchor.
			if tv, ok := pointerValue(c.doc, target.loc); ok && tv.Kind() == strictjson.Object {
				if av, ok := tv.Get("$dynamicAnchor"); ok && av.Kind() == strictjson.String && av.Str() == u.Fragment {
					p.from.dynName = u.Fragment
				}
			}
		}
	}
}

// lookup finds the subschema a reference names, or says why there is none.
func (c *fullCompiler) lookup(text string, base *url.URL) (*fullSchema, string) {
	u, err := url.Parse(text)
	if err != nil {
		return nil, "expected a URI reference, found " + echoQuote(text)
	}
	abs := base.ResolveReference(u)
	frag := abs.Fragment
	abs.Fragment, abs.RawFragment = "", ""
	docURI := abs.String()
	res, ok := c.resources[docURI]
	if !ok {
		return nil, "the reference " + echoQuote(text) + " names " + echoQuote(docURI) +
			", a document outside this schema; references are resolved only within the schema (never fetched)"
	}
	ptr := ""
	switch {
	case frag == "" || strings.HasPrefix(frag, "/"):
		ptr = res.ptr + frag
	default:
		p, ok := c.anchors[docURI+"#"+frag]
		if !ok {
			return nil, "the reference " + echoQuote(text) + " names anchor " + echoQuote(frag) + ", which the schema does not define"
		}
		ptr = p
	}
	if n, ok := c.nodes[ptr]; ok {
		return n, ""
	}
	v, ok := pointerValue(c.doc, ptr)
	if !ok {
		return nil, "the reference " + echoQuote(text) + " points at " + echoQuote(ptr) + ", where the schema has no value"
	}
	if v.Kind() != strictjson.Object && v.Kind() != strictjson.Bool {
		return nil, "the reference " + echoQuote(text) + " points at " + echoQuote(ptr) + ", which is not a schema"
	}
	rb, _ := url.Parse(res.uri)
	return c.compileAt(v, ptr, rb, res.dialect, res), ""
}

// pointerValue returns the value at the JSON Pointer ptr of doc.
func pointerValue(doc strictjson.Value, ptr string) (strictjson.Value, bool) {
	if ptr == "" {
		return doc, true
	}
	if ptr[0] != '/' {
		return strictjson.Value{}, false
	}
	v := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v.Kind() {
		case strictjson.Object:
			next, ok := v.Get(tok)
			if !ok {
				return strictjson.Value{}, false
			}
			v = next
		case strictjson.Array:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= v.Len() || (len(tok) > 1 && tok[0] == '0') {
				return strictjson.Value{}, false
			}
			found := false
			for it := v.Iter(); it.Next(); {
				if it.Index() == i {
					v, found = it.Value(), true
					break
				}
			}
			if !found {
				return strictjson.Value{}, false
			}
		default:
			return strictjson.Value{}, false
		}
	}
	return v, true
}
