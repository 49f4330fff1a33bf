package preflight

// This file holds the JSON Schema subset that Check applies to a request
// body: an allow-list compiler for twelve keywords (type, required,
// properties, items, enum, const, minimum, maximum, minLength, maxLength,
// pattern, additionalProperties) and a validator that reports every failure
// with a JSON Pointer.
//
// Compiling rejects anything outside the subset instead of ignoring it, so a
// caller never believes a keyword was checked when it was not. Validation
// walks the instance once, allocates nothing while values pass, and builds
// pointer strings and messages only for failures it records.

import (
	"errors"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/internal/jsonv"
	"github.com/agentpreflight/preflight/internal/pattern"
)

// issueList collects validation failures, keeping at most max (100 for
// Check). A max of zero or less means no cap. The zero value collects
// without limit. It is not safe for concurrent use.
type issueList struct {
	issues    []Issue
	max       int
	truncated bool // set when a failure was dropped because the list was full
}

// room reports whether one more issue fits; when it does not, it records
// that a failure was dropped.
func (l *issueList) room() bool {
	if l.max > 0 && len(l.issues) >= l.max {
		l.truncated = true
		return false
	}
	return true
}

// add appends is, or marks the list truncated when it is full.
func (l *issueList) add(is Issue) {
	if l.room() {
		l.issues = append(l.issues, is)
	}
}

// typeSet is a set of JSON Schema type names, one bit each.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

// schemaTypeByName maps a JSON Schema type name to its bit; zero means unknown.
func schemaTypeByName(name string) typeSet {
	switch name {
	case "null":
		return typeNull
	case "boolean":
		return typeBoolean
	case "object":
		return typeObject
	case "array":
		return typeArray
	case "number":
		return typeNumber
	case "integer":
		return typeInteger
	case "string":
		return typeString
	}
	return 0
}

// kindTypes maps each kind to the type that names it exactly.
var kindTypes = [8]typeSet{jsonv.Null: typeNull, jsonv.Bool: typeBoolean, jsonv.Number: typeNumber,
	jsonv.String: typeString, jsonv.Array: typeArray, jsonv.Object: typeObject}

// matches reports whether v is one of the types in t. "integer" matches any
// number whose value has no fractional part (1.0 and 1e2 included).
func (t typeSet) matches(v jsonv.Value) bool { return t.matchesKind(v.Kind(), v) }

// matchesKind is matches for a v whose kind k is known.
func (t typeSet) matchesKind(k jsonv.Kind, v jsonv.Value) bool {
	if t&kindTypes[k&7] != 0 {
		return true
	}
	return k == jsonv.Number && t&typeInteger != 0 && decimal.IsInteger(v.Str())
}

// schemaKind tells an object schema from the boolean forms.
type schemaKind uint8

const (
	objectSchema schemaKind = iota // an object with keywords (possibly none)
	trueSchema                     // the boolean schema true: accepts everything
	falseSchema                    // the boolean schema false: rejects everything
)

// The compiled boolean schemas. They are shared and never modified.
var (
	schemaTrue  = &schema{kind: trueSchema}
	schemaFalse = &schema{kind: falseSchema}
)

// Bits of schema.has: which keywords with scalar settings are present.
const (
	hasMinimum uint8 = 1 << iota
	hasMaximum
	hasMinLength
	hasMaxLength
	hasConst
)

// schemaBounds holds what a schema's minimum, maximum, minLength and
// maxLength keywords need beyond flags: the bounds parsed once for
// comparison, and all four as written, for messages. Each part is valid
// when its bit of has is set.
type schemaBounds struct {
	minNum, maxNum         decimal.Number
	minLenText, maxLenText jsonv.Value
}

// schema is a compiled subschema (object or boolean form). It keeps
// references into the parsed schema document (names, enum and const values,
// the type value for messages), which must not change afterwards. A compiled
// schema is immutable and safe for concurrent use.
//
// It is kept small (most fields point into the schema document) because
// Check compiles the caller's schema on every call.
type schema struct {
	kind      schemaKind
	has       uint8
	types     typeSet // zero: no type keyword
	enumKinds uint8   // bit 1<<Kind for each kind of value in enum
	// requiredElsewhere: a required name is not among the properties.
	requiredElsewhere bool
	minLength         int32 // code points; clamped to maxLengthClamp
	maxLength         int32

	typeValue  jsonv.Value  // the type keyword's value, for messages
	required   []string     // unique property names; nil: none
	props      []schemaProp // sorted by name when there are many
	items      *schema
	enum       jsonv.Value   // the enum array; nil: no enum
	enumStrs   *[]string     // the sorted strings of a long enum; nil: scan enum
	constant   jsonv.Value   // valid when has&hasConst
	bounds     *schemaBounds // nil when none of minimum, maximum, minLength, maxLength is present
	pattern    *pattern.Pattern
	additional *schema // nil: no additionalProperties keyword
}

// schemaProp is one member of the properties keyword.
type schemaProp struct {
	name   string
	schema *schema
	// required has bit j set when the property is required name j (for
	// the first 64 names), so that one lookup per member serves both
	// keywords.
	required uint64
}

// maxLengthClamp stands for any length limit beyond it: no string in a
// request that fits the size limits comes close to it.
const (
	maxLengthClamp     = 1 << 30
	maxLengthClampText = "1073741824"
)

// schemaLinearScan is the number of properties up to which lookup is a linear
// scan; beyond it, lookup is a binary search on the sorted names.
const schemaLinearScan = 8

// propertyEntry returns the properties member named name, or nil.
func (s *schema) propertyEntry(name string) *schemaProp {
	ps := s.props
	if len(ps) <= schemaLinearScan {
		for i := range ps {
			if ps[i].name == name {
				return &ps[i]
			}
		}
		return nil
	}
	lo, hi := 0, len(ps)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ps[m].name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ps) && ps[lo].name == name {
		return &ps[lo]
	}
	return nil
}

// enumContains reports whether v equals one of the values of s's enum.
func (s *schema) enumContains(v jsonv.Value) bool {
	if s.enumKinds&(1<<v.Kind()) == 0 {
		return false
	}
	if v.Kind() == jsonv.String && s.enumStrs != nil {
		_, ok := slices.BinarySearch(*s.enumStrs, v.Str())
		return ok
	}
	for it := s.enum.Iter(); it.Next(); {
		if schemaEqual(it.Value(), v) {
			return true
		}
	}
	return false
}

// schemaEqual is JSON equality: numbers compare by exact value (1 == 1.0 ==
// 1e0), object members in any order, array elements in order.
func schemaEqual(a, b jsonv.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case jsonv.Null:
		return true
	case jsonv.Bool:
		return a.Bool() == b.Bool()
	case jsonv.String:
		return a.Str() == b.Str()
	case jsonv.Number:
		return a.Str() == b.Str() || decimal.Compare(a.Str(), b.Str()) == 0
	case jsonv.Array:
		if a.Len() != b.Len() {
			return false
		}
		for x, y := a.Iter(), b.Iter(); x.Next() && y.Next(); {
			if !schemaEqual(x.Value(), y.Value()) {
				return false
			}
		}
		return true
	case jsonv.Object:
		if a.Len() != b.Len() {
			return false
		}
		for it := a.Iter(); it.Next(); {
			bv, ok := b.Get(it.Key())
			if !ok || !schemaEqual(it.Value(), bv) {
				return false
			}
		}
		return true
	}
	return false
}

// compileSchema compiles the schema value v, which sits at JSON Pointer base
// in the submitted document (Check passes "/schema"). The top-level value
// must be an object (else invalid_schema).
//
// On failure it returns a nil schema and an *Error whose Details list every
// problem, in document order, each at the pointer of the offending keyword
// (for example "/schema/properties/x/format") with a message saying what was
// expected. The Error's code is chosen by issuesError, the package's one
// error-code priority.
//
// The compiled schema keeps references into v; v must not be modified
// afterwards. compileSchema never panics on a parsed value and is safe for
// concurrent use.
func compileSchema(v jsonv.Value, base string) (*schema, *Error) {
	c := schemaCompiler{base: base}
	c.count = countSchemas(v)
	c.slab = make([]schema, c.count.schemas)
	var s *schema
	if v.Kind() != jsonv.Object {
		c.fail(nil, IssueInvalidSchema, "expected the schema to be a JSON object, found "+v.Kind().String())
	} else {
		s = c.object(v, nil)
	}
	if len(c.issues) > 0 {
		return nil, issuesError(c.issues)
	}
	return s, nil
}

// mustCompileSchema compiles a built-in schema from JSON text (panics on a
// bad literal; for package vars).
func mustCompileSchema(src string) *schema {
	v, err := jsonv.Parse([]byte(src), jsonv.Limits{})
	if err != nil {
		panic("preflight: built-in schema: " + err.Error())
	}
	s, serr := compileSchema(v, "")
	if serr != nil {
		panic("preflight: built-in schema: " + serr.Error())
	}
	return s
}

// schemaCompiler collects every problem of one schema document.
type schemaCompiler struct {
	base         string // the JSON Pointer of the schema document
	issues       []Issue
	slab         []schema // preallocated object schemas, handed out in order
	boundSlab    []schemaBounds
	props        []schemaProp // backing store of every properties list
	names        []string     // backing store of every required list
	count        schemaCount
	patternInsts int // estimated RE2 program size of the patterns compiled so far
}

func (c *schemaCompiler) fail(at *frame, code IssueCode, msg string) {
	c.issues = append(c.issues, Issue{Path: framePointer(c.base, at), Code: code, Message: msg})
}

// schemaCount is what compiling a document builds, counted first so that
// each kind of part is allocated at once: object schemas, schemas with
// bounds or lengths, properties members and required names.
type schemaCount struct{ schemas, bounded, props, required int }

// countSchemas counts the object schemas that compiling v will build.
func countSchemas(v jsonv.Value) schemaCount {
	if v.Kind() != jsonv.Object {
		return schemaCount{}
	}
	n := schemaCount{schemas: 1}
	bounded := false
	add := func(sub jsonv.Value) {
		k := countSchemas(sub)
		n.schemas += k.schemas
		n.bounded += k.bounded
		n.props += k.props
		n.required += k.required
	}
	for it := v.Iter(); it.Next(); {
		m := it.Member()
		switch m.Key {
		case "properties":
			if m.Value.Kind() == jsonv.Object {
				n.props += m.Value.Len()
				for p := m.Value.Iter(); p.Next(); {
					add(p.Value())
				}
			}
		case "required":
			n.required += m.Value.Len()
		case "items", "additionalProperties":
			add(m.Value)
		case "minimum", "maximum", "minLength", "maxLength":
			bounded = true
		}
	}
	if bounded {
		n.bounded++
	}
	return n
}

// bound returns s.bounds, taking it on first use from a slab sized by
// countSchemas.
func (c *schemaCompiler) bound(s *schema) *schemaBounds {
	if s.bounds == nil {
		if len(c.boundSlab) == 0 {
			c.boundSlab = make([]schemaBounds, max(c.count.bounded, 1))
		}
		s.bounds, c.boundSlab = &c.boundSlab[0], c.boundSlab[1:]
	}
	return s.bounds
}

// take returns a zero-length slice with capacity n carved from *arena,
// which is first allocated with room for want elements (at least n).
func take[T any](arena *[]T, n, want int) []T {
	if cap(*arena)-len(*arena) < n {
		*arena = make([]T, 0, max(want, n))
	}
	start := len(*arena)
	*arena = (*arena)[:start+n]
	return (*arena)[start : start : start+n]
}

// alloc returns a fresh object schema, taking it from the slab sized by
// countSchemas (or a new chunk, should the count ever fall short).
func (c *schemaCompiler) alloc() *schema {
	if len(c.slab) == 0 {
		c.slab = make([]schema, 8)
	}
	s := &c.slab[0]
	c.slab = c.slab[1:]
	return s
}

// sub compiles a value in a schema position: an object or a boolean.
func (c *schemaCompiler) sub(v jsonv.Value, at *frame) *schema {
	switch v.Kind() {
	case jsonv.Bool:
		if v.Bool() {
			return schemaTrue
		}
		return schemaFalse
	case jsonv.Object:
		return c.object(v, at)
	}
	c.fail(at, IssueInvalidSchema, "expected a schema (an object or a boolean), found "+v.Kind().String())
	return nil
}

const schemaKeywordList = "type, required, properties, items, enum, const, minimum, maximum, minLength, maxLength, pattern, additionalProperties"

// object compiles an object schema, checking every member against the
// allow-list. Values of enum and const are data and are never inspected for
// keywords; neither are the values of unsupported keywords.
func (c *schemaCompiler) object(v jsonv.Value, at *frame) *schema {
	s := c.alloc()
	// One frame serves every keyword: declared outside the loop, it stays
	// on the stack.
	step := frame{up: at, index: -1}
	kw := &step
	for it := v.Iter(); it.Next(); {
		m := it.Member()
		step.name = m.Key
		val := m.Value
		switch m.Key {
		case "type":
			c.compileType(s, val, kw)
		case "required":
			c.compileRequired(s, val, kw)
		case "properties":
			c.compileProperties(s, val, kw)
		case "items":
			switch val.Kind() {
			case jsonv.Array:
				c.fail(kw, IssueUnsupportedSchemaKeyword, `the array form of "items" is not supported; give one schema for all items`)
			default:
				s.items = c.sub(val, kw)
			}
		case "additionalProperties":
			s.additional = c.sub(val, kw)
		case "enum":
			if val.Kind() != jsonv.Array {
				c.fail(kw, IssueInvalidSchema, "expected an array of allowed values, found "+val.Kind().String())
				continue
			}
			compileEnum(s, val)
		case "const":
			s.constant = val
			s.has |= hasConst
		case "minimum", "maximum":
			if val.Kind() != jsonv.Number {
				c.fail(kw, IssueInvalidSchema, "expected a number, found "+val.Kind().String())
				continue
			}
			if m.Key == "minimum" {
				c.bound(s).minNum, s.has = decimal.ParseNumber(val.Str()), s.has|hasMinimum
			} else {
				c.bound(s).maxNum, s.has = decimal.ParseNumber(val.Str()), s.has|hasMaximum
			}
		case "minLength", "maxLength":
			n, ok := schemaLengthLimit(val)
			if !ok {
				c.fail(kw, IssueInvalidSchema, "expected a non-negative integer, found "+echoJSON(val))
				continue
			}
			if m.Key == "minLength" {
				s.minLength, c.bound(s).minLenText, s.has = n, val, s.has|hasMinLength
			} else {
				s.maxLength, c.bound(s).maxLenText, s.has = n, val, s.has|hasMaxLength
			}
		case "pattern":
			if val.Kind() != jsonv.String {
				c.fail(kw, IssueInvalidSchema, "expected a regular expression string, found "+val.Kind().String())
				continue
			}
			room := min(maxPatternInsts, maxSchemaPatternInsts-c.patternInsts)
			re, size, err := compilePattern(val.Str(), room)
			switch {
			case err != nil:
				c.fail(kw, IssueUnsupportedPattern, "Go's RE2 cannot compile the pattern: "+re2Reason(err))
			case size > maxPatternInsts:
				c.fail(kw, IssueUnsupportedPattern, "the pattern expands to more than "+strconv.Itoa(maxPatternInsts)+
					" RE2 instructions, the most allowed per pattern; use smaller repetition counts")
			case re == nil:
				c.fail(kw, IssueUnsupportedPattern, "the schema's patterns expand to more than "+strconv.Itoa(maxSchemaPatternInsts)+
					" RE2 instructions together; use fewer or smaller patterns")
			default:
				c.patternInsts += size
				s.pattern = re
			}
		default:
			c.fail(kw, IssueUnsupportedSchemaKeyword, "keyword "+echoQuote(m.Key)+" is not supported (supported: "+schemaKeywordList+")")
		}
	}
	s.linkRequired()
	return s
}

// linkRequired marks each required name that is also a property on the
// property's entry. requiredElsewhere is set when some required name has no
// property entry (or is past the 64 a mask holds), so that validation
// still matches those names one by one.
func (s *schema) linkRequired() {
	for j, name := range s.required {
		p := s.propertyEntry(name)
		if p == nil || j >= 64 {
			s.requiredElsewhere = true
			continue
		}
		p.required |= 1 << j
	}
}

const typeExpectation = "expected a type name (null, boolean, object, array, number, integer, string) or a non-empty array of unique type names"

func (c *schemaCompiler) compileType(s *schema, v jsonv.Value, at *frame) {
	switch v.Kind() {
	case jsonv.String:
		t := schemaTypeByName(v.Str())
		if t == 0 {
			c.fail(at, IssueInvalidSchema, typeExpectation+", found "+echoQuote(v.Str()))
			return
		}
		s.types, s.typeValue = t, v
	case jsonv.Array:
		if v.Len() == 0 {
			c.fail(at, IssueInvalidSchema, typeExpectation+", found an empty array")
			return
		}
		var set typeSet
		for iter := v.Iter(); iter.Next(); {
			i, it := iter.Index(), iter.Value()
			var t typeSet
			if it.Kind() == jsonv.String {
				t = schemaTypeByName(it.Str())
			}
			switch {
			case t == 0:
				c.fail(at, IssueInvalidSchema, typeExpectation+", found "+echoJSON(it)+" at index "+strconv.Itoa(i))
				return
			case set&t != 0:
				c.fail(at, IssueInvalidSchema, typeExpectation+", found "+echoQuote(it.Str())+" twice")
				return
			}
			set |= t
		}
		s.types, s.typeValue = set, v
	default:
		c.fail(at, IssueInvalidSchema, typeExpectation+", found "+v.Kind().String())
	}
}

func (c *schemaCompiler) compileRequired(s *schema, v jsonv.Value, at *frame) {
	const want = "expected an array of unique property names (strings)"
	if v.Kind() != jsonv.Array {
		c.fail(at, IssueInvalidSchema, want+", found "+v.Kind().String())
		return
	}
	names := take(&c.names, v.Len(), c.count.required)
	for iter := v.Iter(); iter.Next(); {
		if it := iter.Value(); it.Kind() != jsonv.String {
			c.fail(at, IssueInvalidSchema, want+", found "+it.Kind().String()+" at index "+strconv.Itoa(iter.Index()))
			return
		} else {
			names = append(names, it.Str())
		}
	}
	if dup, ok := firstDuplicateName(names); ok {
		c.fail(at, IssueInvalidSchema, want+", found "+echoQuote(dup)+" twice")
		return
	}
	s.required = names
}

// firstDuplicateName returns a name that occurs more than once in names.
func firstDuplicateName(names []string) (string, bool) {
	if len(names) <= 32 {
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				if names[i] == names[j] {
					return names[i], true
				}
			}
		}
		return "", false
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return sorted[i], true
		}
	}
	return "", false
}

func (c *schemaCompiler) compileProperties(s *schema, v jsonv.Value, at *frame) {
	if v.Kind() != jsonv.Object {
		c.fail(at, IssueInvalidSchema, "expected an object mapping property names to schemas, found "+v.Kind().String())
		return
	}
	props := take(&c.props, v.Len(), c.count.props)
	step := frame{up: at, index: -1}
	for it := v.Iter(); it.Next(); {
		m := it.Member()
		step.name = m.Key
		name := &step
		props = append(props, schemaProp{name: m.Key, schema: c.sub(m.Value, name)})
	}
	if len(props) > schemaLinearScan {
		slices.SortFunc(props, func(a, b schemaProp) int { return strings.Compare(a.name, b.name) })
	}
	s.props = props
}

// compileEnum indexes the enum array list for s.
func compileEnum(s *schema, list jsonv.Value) {
	s.enum = list
	nstr := 0
	for it := list.Iter(); it.Next(); {
		k := it.Value().Kind()
		s.enumKinds |= 1 << k
		if k == jsonv.String {
			nstr++
		}
	}
	if nstr > schemaLinearScan {
		strs := make([]string, 0, nstr)
		for it := list.Iter(); it.Next(); {
			if v := it.Value(); v.Kind() == jsonv.String {
				strs = append(strs, v.Str())
			}
		}
		slices.Sort(strs)
		s.enumStrs = &strs
	}
}

// schemaLengthLimit reads a minLength/maxLength value: a non-negative number with
// no fractional part (2.0 is fine). Limits beyond maxLengthClamp are clamped.
func schemaLengthLimit(v jsonv.Value) (int32, bool) {
	if v.Kind() != jsonv.Number || !decimal.IsInteger(v.Str()) || decimal.Compare(v.Str(), "0") < 0 {
		return 0, false
	}
	if decimal.Compare(v.Str(), maxLengthClampText) >= 0 {
		return maxLengthClamp, true
	}
	// An integer below 2^30 is exact as a float64, whatever its spelling.
	f, err := strconv.ParseFloat(v.Str(), 64)
	if err != nil {
		return 0, false
	}
	return int32(f), true
}

// Bounds on the size of the RE2 programs of a schema's patterns. RE2 matches
// in time linear in the input, but also proportional to the program, and a
// short pattern can expand to a large program: (?:a?){1000} is 2,000
// instructions. Unbounded, a 32 KiB schema of such repetitions compiles to
// millions of instructions (seconds of CPU and hundreds of MB per request)
// and then takes minutes to match one string of the body. With these caps
// compiling one schema's patterns stays within a few MB, and matching costs
// at most about maxPatternInsts steps per byte of the body.
const (
	maxPatternInsts       = 3000  // one pattern
	maxSchemaPatternInsts = 30000 // all patterns of one schema together
)

// compilePattern compiles src with Go's RE2 syntax when its program fits in
// limit instructions (see internal/pattern); a nil pattern with a nil error
// means it does not.
func compilePattern(src string, limit int) (*pattern.Pattern, int, error) {
	return pattern.Compile(src, limit)
}

// re2Reason shortens a regexp compile error for a message.
func re2Reason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return se.Code.String() + ": " + echoQuote(se.Expr)
	}
	return clip.String(err.Error())
}

// appendTypePhrase appends the allowed types as the schema lists them:
// "string", "string or null".
func (s *schema) appendTypePhrase(dst []byte) []byte {
	t := s.typeValue
	if t.Kind() == jsonv.String {
		return append(dst, t.Str()...)
	}
	for it := t.Iter(); it.Next(); {
		if it.Index() > 0 {
			dst = append(dst, " or "...)
		}
		dst = append(dst, it.Value().Str()...)
	}
	return dst
}

// appendFoundType appends the type of v for a type failure; a number that
// is not an integer where one is wanted is shown with its value.
func (s *schema) appendFoundType(dst []byte, v jsonv.Value) []byte {
	if v.Kind() == jsonv.Number && s.types&typeInteger != 0 {
		dst = append(dst, "number "...)
		return clip.Append(dst, v.Str())
	}
	return append(dst, v.Kind().String()...)
}

// echoQuote quotes s for a message, clipped to clip.Max bytes.
func echoQuote(s string) string {
	return strconv.Quote(clip.String(s))
}

// echoJSON renders v as compact JSON for a message, clipped to
// clip.Max bytes.
func echoJSON(v jsonv.Value) string {
	var buf [2*clip.Max + 16]byte
	return string(appendEchoJSON(buf[:0], v))
}

// appendEchoJSON appends echoJSON(v) to dst.
func appendEchoJSON(dst []byte, v jsonv.Value) []byte {
	start := len(dst)
	dst, _ = appendEcho(dst, start, v)
	if len(dst)-start <= clip.Max {
		return dst
	}
	return append(dst[:start+clip.Cut(dst[start:], clip.Max)], clip.Mark...)
}

// appendEchoQuote appends echoQuote(s) to dst.
func appendEchoQuote(dst []byte, s string) []byte {
	if len(s) <= clip.Max {
		return strconv.AppendQuote(dst, s)
	}
	dst = strconv.AppendQuote(dst, s[:clip.Cut(s, clip.Max)])
	return append(append(dst[:len(dst)-1], clip.Mark...), '"') // the mark inside the quotes
}

// appendEcho writes v to dst as compact JSON (strings quoted Go-style), and
// stops early, reporting false, once what it wrote since start has grown
// past clip.Max.
func appendEcho(dst []byte, start int, v jsonv.Value) ([]byte, bool) {
	if len(dst)-start > clip.Max {
		return dst, false
	}
	switch v.Kind() {
	case jsonv.Null:
		dst = append(dst, "null"...)
	case jsonv.Bool:
		dst = strconv.AppendBool(dst, v.Bool())
	case jsonv.Number:
		dst = append(dst, clip.String(v.Str())...)
	case jsonv.String:
		dst = appendEchoQuote(dst, v.Str())
	case jsonv.Array:
		dst = append(dst, '[')
		for it := v.Iter(); it.Next(); {
			if it.Index() > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendEcho(dst, start, it.Value()); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	case jsonv.Object:
		dst = append(dst, '{')
		for it := v.Iter(); it.Next(); {
			if it.Index() > 0 {
				dst = append(dst, ',')
			}
			dst = appendEchoQuote(dst, it.Key())
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendEcho(dst, start, it.Value()); !ok {
				return dst, false
			}
		}
		dst = append(dst, '}')
	}
	return dst, len(dst)-start <= clip.Max
}

// characters is the unit after a length limit: " character" for 1.
func characters(limit string) string {
	if limit == "1" {
		return " character"
	}
	return " characters"
}
