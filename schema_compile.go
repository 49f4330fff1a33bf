package preflight

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/internal/pattern"
	"github.com/agentpreflight/preflight/strictjson"
)

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
func compileSchema(v strictjson.Value, base string) (*schema, *Error) {
	c := schemaCompiler{base: base}
	return c.compile(v)
}

// compile does the work of compileSchema with c's settings.
func (c *schemaCompiler) compile(v strictjson.Value) (*schema, *Error) {
	c.count = countSchemas(v)
	c.slab = make([]schema, c.count.schemas)
	var s *schema
	if v.Kind() != strictjson.Object {
		c.fail(nil, IssueInvalidSchema, "expected the schema to be a JSON object, found "+v.Kind().String())
	} else {
		s = c.object(v, nil)
	}
	if len(c.issues) > 0 {
		return nil, issuesError(c.issues)
	}
	s.patterns = int32(c.patterns.len())
	return s, nil
}

// mustCompileSchema compiles a built-in schema from JSON text (panics on a
// bad literal; for package vars).
func mustCompileSchema(src string) *schema {
	v, err := strictjson.Parse([]byte(src), strictjson.Limits{})
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
	annotations  bool   // ignore annotation keywords (catalog schemas; see ignoredAnnotation)
	issues       []Issue
	slab         []schema // preallocated object schemas, handed out in order
	boundSlab    []schemaBounds
	props        []schemaProp // backing store of every properties list
	strs         []string     // backing store of every required list and enum's strings
	count        schemaCount
	patternInsts int // estimated program size of the patterns compiled so far
	classRanges  int // class ranges of the patterns compiled so far
	patterns     patternSet
}

func (c *schemaCompiler) fail(at *frame, code IssueCode, msg string) {
	c.issues = append(c.issues, Issue{Path: framePointer(c.base, at), Code: code, Message: msg})
}

// schemaCount is what compiling a document builds, counted first so that
// each kind of part is allocated at once: object schemas, schemas with
// bounds or lengths, properties members, and required names with enum
// members (strs).
type schemaCount struct{ schemas, bounded, props, strs int }

// countSchemas counts the object schemas that compiling v will build.
func countSchemas(v strictjson.Value) schemaCount {
	if v.Kind() != strictjson.Object {
		return schemaCount{}
	}
	n := schemaCount{schemas: 1}
	bounded := false
	add := func(sub strictjson.Value) {
		k := countSchemas(sub)
		n.schemas += k.schemas
		n.bounded += k.bounded
		n.props += k.props
		n.strs += k.strs
	}
	for it := v.Iter(); it.Next(); {
		m := it.Member()
		switch m.Key {
		case "properties":
			if m.Value.Kind() == strictjson.Object {
				n.props += m.Value.Len()
				for p := m.Value.Iter(); p.Next(); {
					add(p.Value())
				}
			}
		case "required", "enum":
			n.strs += m.Value.Len()
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
func (c *schemaCompiler) sub(v strictjson.Value, at *frame) *schema {
	switch v.Kind() {
	case strictjson.Bool:
		if v.Bool() {
			return schemaTrue
		}
		return schemaFalse
	case strictjson.Object:
		return c.object(v, at)
	}
	c.fail(at, IssueInvalidSchema, "expected a schema (an object or a boolean), found "+v.Kind().String())
	return nil
}

const schemaKeywordList = "type, required, properties, items, enum, const, minimum, maximum, minLength, maxLength, pattern, additionalProperties"

// object compiles an object schema, checking every member against the
// allow-list. Values of enum and const are data and are never inspected for
// keywords; neither are the values of unsupported keywords.
func (c *schemaCompiler) object(v strictjson.Value, at *frame) *schema {
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
			case strictjson.Array:
				c.fail(kw, IssueUnsupportedSchemaKeyword, `the array form of "items" is not supported; give one schema for all items`)
			default:
				s.items = c.sub(val, kw)
			}
		case "additionalProperties":
			s.additional = c.sub(val, kw)
		case "enum":
			if val.Kind() != strictjson.Array {
				c.fail(kw, IssueInvalidSchema, "expected an array of allowed values, found "+val.Kind().String())
				continue
			}
			c.enum(s, val)
		case "const":
			s.constant = val
			s.has |= hasConst
		case "minimum", "maximum":
			if val.Kind() != strictjson.Number {
				c.fail(kw, IssueInvalidSchema, "expected a number, found "+val.Kind().String())
				continue
			}
			b, x := c.bound(s), decimal.ParseNumber(val.Str())
			if m.Key == "minimum" {
				b.minNum, b.minNotPositive, s.has = x, x.Cmp(decimalZero) <= 0, s.has|hasMinimum
			} else {
				b.maxNum, b.maxNotNegative, s.has = x, x.Cmp(decimalZero) >= 0, s.has|hasMaximum
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
			if val.Kind() != strictjson.String {
				c.fail(kw, IssueInvalidSchema, "expected a regular expression string, found "+val.Kind().String())
				continue
			}
			room := min(maxPatternInsts, maxSchemaPatternInsts-c.patternInsts)
			if p, ok := c.patterns.find(val.Str()); ok && p.size <= room && p.ranges <= maxSchemaClassRanges-c.classRanges {
				// The same pattern again: share its program and matcher, but
				// count it against the limits as if it were compiled anew,
				// so that which schemas are refused does not depend on it.
				c.classRanges += p.ranges
				c.patternInsts += p.size
				s.pattern, s.patternIndex = p.re, p.index
				continue
			}
			re, size, ranges, err := pattern.CompileWithin(val.Str(), room, maxSchemaClassRanges-c.classRanges)
			c.classRanges += ranges
			pe, _ := err.(*pattern.Error) // CompileWithin's errors are never wrapped
			switch {
			case pe != nil && pe.OverRanges:
				c.fail(kw, IssueUnsupportedPattern, "the schema's patterns hold more than "+strconv.Itoa(maxSchemaClassRanges)+
					" character-class ranges together (the limit was reached at "+pieceAt(pe)+"); use fewer or smaller classes, such as fewer \\p{…} properties")
			case pe != nil && pe.OverSize && room == maxPatternInsts:
				c.fail(kw, IssueUnsupportedPattern, "the pattern expands to more than "+strconv.Itoa(maxPatternInsts)+
					" instructions, the most allowed per pattern (the limit was reached at "+pieceAt(pe)+"); use smaller repetition counts")
			case pe != nil && pe.OverSize:
				where := "the limit was reached at " + pieceAt(pe) + " of this pattern"
				if pe.Piece == "" { // the empty pattern: its few fixed instructions did not fit
					where = "the patterns before this one leave no room for it"
				}
				c.fail(kw, IssueUnsupportedPattern, "the schema's patterns expand to more than "+strconv.Itoa(maxSchemaPatternInsts)+
					" instructions together ("+where+"); use fewer or smaller patterns")
			case err != nil:
				c.fail(kw, IssueUnsupportedPattern, patternReason(err))
			default:
				c.patternInsts += size
				s.pattern, s.patternIndex = re, c.patterns.add(compiledPattern{re: re, size: size, ranges: ranges}).index
			}
		default:
			if c.annotations {
				if ok, msg := ignoredAnnotation(m.Key, val); ok {
					continue
				} else if msg != "" {
					c.fail(kw, IssueUnsupportedSchemaKeyword, msg)
					continue
				}
			}
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

func (c *schemaCompiler) compileType(s *schema, v strictjson.Value, at *frame) {
	switch v.Kind() {
	case strictjson.String:
		t := schemaTypeByName(v.Str())
		if t == 0 {
			c.fail(at, IssueInvalidSchema, typeExpectation+", found "+echoQuote(v.Str()))
			return
		}
		s.types, s.typeValue = t, v
	case strictjson.Array:
		if v.Len() == 0 {
			c.fail(at, IssueInvalidSchema, typeExpectation+", found an empty array")
			return
		}
		var set typeSet
		for iter := v.Iter(); iter.Next(); {
			i, it := iter.Index(), iter.Value()
			var t typeSet
			if it.Kind() == strictjson.String {
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

func (c *schemaCompiler) compileRequired(s *schema, v strictjson.Value, at *frame) {
	const want = "expected an array of unique property names (strings)"
	if v.Kind() != strictjson.Array {
		c.fail(at, IssueInvalidSchema, want+", found "+v.Kind().String())
		return
	}
	names := take(&c.strs, v.Len(), c.count.strs)
	for iter := v.Iter(); iter.Next(); {
		if it := iter.Value(); it.Kind() != strictjson.String {
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

func (c *schemaCompiler) compileProperties(s *schema, v strictjson.Value, at *frame) {
	if v.Kind() != strictjson.Object {
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

// enum indexes the enum array list for s.
func (c *schemaCompiler) enum(s *schema, list strictjson.Value) {
	s.enum = list
	s.has |= hasEnum
	nstr := 0
	for it := list.Iter(); it.Next(); {
		k := it.Value().Kind()
		s.enumKinds |= 1 << k
		if k == strictjson.String {
			nstr++
		}
	}
	if nstr == 0 {
		return
	}
	strs := take(&c.strs, nstr, c.count.strs)
	for it := list.Iter(); it.Next(); {
		if v := it.Value(); v.Kind() == strictjson.String {
			strs = append(strs, v.Str())
		}
	}
	if nstr > schemaLinearScan {
		slices.Sort(strs)
	}
	s.enumStrs = strs
}

// schemaLengthLimit reads a minLength/maxLength value: a non-negative number with
// no fractional part (2.0 is fine). Limits beyond maxLengthClamp are clamped.
func schemaLengthLimit(v strictjson.Value) (int32, bool) {
	if v.Kind() == strictjson.Number {
		if t := v.Str(); len(t) <= 9 && (len(t) == 1 || t[0] != '0') {
			n := int32(0)
			for i := 0; i < len(t) && n >= 0; i++ {
				if c := t[i]; c >= '0' && c <= '9' {
					n = n*10 + int32(c-'0')
				} else {
					n = -1 // a sign, fraction or exponent: the general path
				}
			}
			if n >= 0 {
				return min(n, maxLengthClamp), true // plain digits, the usual spelling
			}
		}
	}
	if v.Kind() != strictjson.Number || !decimal.IsInteger(v.Str()) || decimal.Compare(v.Str(), "0") < 0 {
		return 0, false
	}
	if decimal.Compare(v.Str(), maxLengthClampText) >= 0 {
		return maxLengthClamp, true
	}
	// An integer below 2^30 is exact as a float64, whatever its spelling.
	f, err := decimal.ParseFloat(v.Str())
	if err != nil {
		return 0, false
	}
	return int32(f), true
}

// Bounds on the size of the programs of a schema's patterns. Matching is
// linear in the input, but building a DFA state costs up to one step per
// instruction, and a short pattern can expand to a large program:
// (?:a?){1000} is 2,000 instructions. Unbounded, a 32 KiB schema of such
// repetitions compiles to millions of instructions (seconds of CPU and
// hundreds of MB per request). With these caps compiling one schema's
// patterns stays within a few MB, and matching costs at most about
// maxPatternInsts steps per character of the body, far less once the
// DFA's states are built.
const (
	maxPatternInsts       = 3000  // one pattern
	maxSchemaPatternInsts = 30000 // all patterns of one schema together
)

// maxSchemaClassRanges bounds the character-class ranges of all of a
// schema's patterns together, counted as written (one per range or
// character of a class, about 680 for \p{L}, 1 for \d; see
// pattern.CompileWithin). Parsing and compiling a class costs time in its
// ranges, not in the one instruction it becomes, so without this bound a
// 32 KiB schema of 1,900 distinct classes such as [\p{L}\u{2000}] costs
// about 100 ms of CPU to compile before validation counts a step. A
// schema within it compiles its classes in a few milliseconds; an
// ordinary one uses a few hundred ranges, one heavy on \p{…} a few
// thousand.
const maxSchemaClassRanges = 60000

// patternReason says why a pattern was refused: the piece, its offset and
// what is wrong, with the caller's text clipped.
func patternReason(err error) string {
	var pe *pattern.Error
	if !errors.As(err, &pe) {
		return "the pattern cannot be compiled: " + clip.String(err.Error())
	}
	if pe.Unsupported {
		return pe.Reason + " " + pieceAt(pe) + " is not supported: " + pattern.NotRegular
	}
	if pe.TooDeep {
		return "the pattern is over a limit of this validator (JavaScript has none): " + pe.Reason + ": " + pieceAt(pe)
	}
	return "the pattern is not valid ECMA-262 (JavaScript, u flag): " + pe.Reason + ": " + pieceAt(pe)
}

// pieceAt names the piece of a pattern an error is about, quoted, and its
// offset in code points.
func pieceAt(pe *pattern.Error) string {
	return echoQuote(pe.Piece) + " at offset " + strconv.Itoa(pe.Offset)
}
