// Package jsonv parses JSON into a small ordered tree that keeps what the
// preflight rules need and encoding/json throws away: member order, the exact
// text of every number, and the byte span of every value.
//
// The parser is strict (RFC 8259 plus I-JSON's rules): duplicate object keys,
// invalid UTF-8 and lone surrogate escapes are errors. It enforces optional
// depth and node limits while it parses, so a hostile document is rejected
// before it is built.
package jsonv

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// String returns the JSON Schema name of the kind ("null", "boolean", ...).
func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "unknown"
}

// Value is one parsed JSON value.
type Value struct {
	Kind Kind
	// Bool holds the value of a Bool.
	Bool bool
	// Str holds the decoded text of a String, or the literal text of a
	// Number exactly as it appeared in the document.
	Str string
	// Items holds the elements of an Array.
	Items []Value
	// Members holds the members of an Object in document order.
	Members []Member
	// Start and End are the byte offsets of the value in the parsed document.
	Start, End int
}

// Member is one name/value pair of an Object.
type Member struct {
	Key   string
	Value Value
}

// Get returns the member named key and whether it exists.
func (v *Value) Get(key string) (*Value, bool) {
	for i := range v.Members {
		if v.Members[i].Key == key {
			return &v.Members[i].Value, true
		}
	}
	return nil, false
}
