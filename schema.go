package preflight

// The JSON Schema subset that Check applies to a request body lives in four
// files, one concern each:
//
//   - schema.go (this file): the compiled form of a schema.
//   - schema_compile.go: an allow-list compiler for twelve keywords (type,
//     required, properties, items, enum, const, minimum, maximum, minLength,
//     maxLength, pattern, additionalProperties). It rejects anything outside
//     the subset instead of ignoring it, so a caller never believes a
//     keyword was checked when it was not.
//   - validate.go: the validator. It walks the instance once, allocates
//     nothing while values pass, and builds pointer strings and messages
//     only for failures it records.
//   - schema_messages.go: the text of those messages.

import (
	"slices"
	"sync/atomic"

	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/internal/pattern"
	"github.com/agentpreflight/preflight/strictjson"
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
var kindTypes = [8]typeSet{strictjson.Null: typeNull, strictjson.Bool: typeBoolean, strictjson.Number: typeNumber,
	strictjson.String: typeString, strictjson.Array: typeArray, strictjson.Object: typeObject}

// matchesKind reports whether v, of kind k, is one of the types in t.
// "integer" matches any number whose value has no fractional part (1.0 and
// 1e2 included).
// The test of the kind is apart from the test of "integer", so that it
// is inlined where it is called.
func (t typeSet) matchesKind(k strictjson.Kind, v strictjson.Value) bool {
	return t&kindTypes[k&7] != 0 || t.matchesInteger(k, v)
}

// matchesInteger reports whether t has "integer" and v, of kind k, is an
// integer.
func (t typeSet) matchesInteger(k strictjson.Kind, v strictjson.Value) bool {
	return k == strictjson.Number && t&typeInteger != 0 && decimal.IsInteger(v.Str())
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
	hasEnum // with enum, so that one test tells whether a value meets enum or const
)

// schemaBounds holds what a schema's minimum, maximum, minLength and
// maxLength keywords need beyond flags: the bounds parsed once for
// comparison, and all four as written, for messages. Each part is valid
// when its bit of has is set.
type schemaBounds struct {
	minNum, maxNum         decimal.Number
	minLenText, maxLenText strictjson.Value
	// A value's sign meets a minimum of at most 0 when it is not negative,
	// and a maximum of at least 0 when it is, without reading its digits.
	minNotPositive, maxNotNegative bool
}

// decimalZero is the number 0, to tell the sign of a bound.
var decimalZero = decimal.ParseNumber("0")

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
	// shared: this is the root of a schema kept in the cache of compiled
	// schemas, so that what a validation works out (enumEcho, the
	// patterns' warm matchers) is worth keeping for the next.
	shared bool
	// patterns is the number of distinct patterns of the document (root
	// only).
	patterns  int32
	minLength int32 // code points; clamped to maxLengthClamp
	maxLength int32

	typeValue strictjson.Value // the type keyword's value, for messages
	required  []string         // unique property names; nil: none
	props     []schemaProp     // sorted by name when there are many
	items     *schema
	enum      strictjson.Value // the enum array; nil: no enum
	enumStrs  []string         // the strings of enum, sorted when there are more than schemaLinearScan
	// enumEcho is the start of enum's failure message, "expected one of
	// [...], found ", written by the first failure and reused by the
	// next (a compiled schema kept in the cache meets many bodies).
	enumEcho atomic.Pointer[string]
	constant strictjson.Value // valid when has&hasConst
	bounds   *schemaBounds    // nil when none of minimum, maximum, minLength, maxLength is present
	pattern  *pattern.Pattern
	// patternIndex numbers pattern among the document's distinct
	// patterns: a validation finds its matcher state by it (validator.state).
	patternIndex int32
	additional   *schema // nil: no additionalProperties keyword
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

// fewRequired reports whether s's required names are few enough to be
// tracked as bits of a uint64 (see schemaProp.required).
func (s *schema) fewRequired() bool { return len(s.required) <= 64 }

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
func (s *schema) enumContains(v strictjson.Value) bool {
	if s.enumKinds&(1<<v.Kind()) == 0 {
		return false
	}
	if v.Kind() == strictjson.String {
		str := v.Str()
		if len(s.enumStrs) > schemaLinearScan {
			_, ok := slices.BinarySearch(s.enumStrs, str)
			return ok
		}
		return slices.Contains(s.enumStrs, str)
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
func schemaEqual(a, b strictjson.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case strictjson.Null:
		return true
	case strictjson.Bool:
		return a.Bool() == b.Bool()
	case strictjson.String:
		return a.Str() == b.Str()
	case strictjson.Number:
		return a.Str() == b.Str() || decimal.Compare(a.Str(), b.Str()) == 0
	case strictjson.Array:
		if a.Len() != b.Len() {
			return false
		}
		for x, y := a.Iter(), b.Iter(); x.Next() && y.Next(); {
			if !schemaEqual(x.Value(), y.Value()) {
				return false
			}
		}
		return true
	case strictjson.Object:
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

// pointerTo appends to dst the JSON Pointer, relative to s, of the
// subschema target, and reports whether target is below s. Only a limit
// error needs it, so schemas do not carry their own location.
func (s *schema) pointerTo(dst []byte, target *schema) ([]byte, bool) {
	if s == target {
		return dst, true
	}
	for i := range s.props {
		if s.props[i].schema == nil {
			continue
		}
		mark := len(dst)
		d := append(append(dst, "/properties/"...), strictjson.EscapePointerToken(s.props[i].name)...)
		if d, ok := s.props[i].schema.pointerTo(d, target); ok {
			return d, true
		}
		dst = dst[:mark]
	}
	if s.items != nil {
		if d, ok := s.items.pointerTo(append(dst, "/items"...), target); ok {
			return d, true
		}
		dst = dst[:len(dst)-len("/items")]
	}
	if s.additional != nil {
		if d, ok := s.additional.pointerTo(append(dst, "/additionalProperties"...), target); ok {
			return d, true
		}
		dst = dst[:len(dst)-len("/additionalProperties")]
	}
	return dst, false
}
