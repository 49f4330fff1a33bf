// Package strictjson reads JSON the way every part of preflight reads it,
// and quotes caller text back the way every preflight message does. The
// library's decoders, the reference server, the MCP guard and the proxy all
// parse through it, so a document one of them accepts is read alike by the
// others, and one they refuse is refused with the same kind of error.
//
// Parse builds a compact, read-only tree that keeps what encoding/json
// throws away: member order, the exact text of every number, and the byte
// span of every value. The tree is a flat "tape" of fixed-size nodes that
// hold no pointers, so a parsed document costs one allocation and nothing
// for the garbage collector to scan. Strings without escapes are not
// copied: they are slices of the document, which must therefore not be
// modified while the tree is in use.
//
// The parser is strict (RFC 8259 plus I-JSON's rules): duplicate object
// keys, invalid UTF-8 and lone surrogate escapes are errors. It enforces
// optional depth and node limits while it parses, so a hostile document is
// rejected before it is built.
package strictjson

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

// doc is one parsed document.
type doc struct {
	src   string   // the document text
	nodes []node   // values in document order; an object's members are key, value pairs
	esc   []string // decoded text of strings that had escapes
	// scratch marks a tree from ParseScratch, whose nodes Release takes
	// back, in box when it is not nil.
	scratch bool
	box     *[]node
}

// node is one value (or member name) on the tape.
type node struct {
	start, end uint32 // byte span in src; strings include their quotes
	next       uint32 // index of the first node after this value's subtree
	meta       uint32 // kind | flags | count (see below)
}

const (
	kindBits   = 3
	kindMask   = 1<<kindBits - 1
	flagTrue   = 1 << kindBits       // a Bool that is true
	flagEscape = 1 << (kindBits + 1) // a String whose text is in doc.esc
	// flagVerbatim marks a value whose text in the document is already its
	// RFC 8785 form, so canonicalization copies it: a literal, a string
	// without escapes, a number in shortest form, a container of such
	// values without white space and with its members in order.
	flagVerbatim = 1 << (kindBits + 2)
	// flagRepeat marks an Object, an item of an array, whose member names
	// are those of the item before it, in the same order, byte for byte.
	flagRepeat = 1 << (kindBits + 3)
	countShift = kindBits + 4 // containers: number of items or members; escaped strings: index in esc
)

// Value is one value of a parsed document: a small handle that is cheap to
// copy. The zero Value is not valid. Values are read-only and safe for
// concurrent use, until the Release of a tree from ParseScratch.
type Value struct {
	d *doc
	i uint32
}

func (v Value) n() *node { return &v.d.nodes[v.i] }

// RepeatsNames reports whether v is an Object, an item of an array, whose
// member names are those of the item before it, in the same order and
// written byte for byte alike. Arrays of records tend to repeat their
// names, so what was worked out from the names of one item (where each
// member's schema is, which required names are present) holds for the
// next. It may report false for an item that does repeat the names.
func (v Value) RepeatsNames() bool { return v.n().meta&flagRepeat != 0 }

// IsValid reports whether v refers to a value.
func (v Value) IsValid() bool { return v.d != nil }

// Kind returns the JSON type of v.
func (v Value) Kind() Kind { return Kind(v.n().meta & kindMask) }

// Bool returns the value of a Bool (false for other kinds).
func (v Value) Bool() bool { return v.n().meta&flagTrue != 0 }

// Str returns the decoded text of a String, or the literal text of a Number
// exactly as it appears in the document.
func (v Value) Str() string {
	n := v.n()
	switch Kind(n.meta & kindMask) {
	case String:
		if n.meta&flagEscape != 0 {
			return v.d.esc[n.meta>>countShift]
		}
		return v.d.src[n.start+1 : n.end-1]
	case Number:
		return v.d.src[n.start:n.end]
	}
	return ""
}

// Start and End are the byte offsets of v in the parsed document.
func (v Value) Start() int { return int(v.n().start) }

// End is the offset just past v.
func (v Value) End() int { return int(v.n().end) }

// Raw returns the text of v exactly as it appears in the document.
func (v Value) Raw() string { n := v.n(); return v.d.src[n.start:n.end] }

// Len returns the number of items of an Array or members of an Object.
func (v Value) Len() int {
	n := v.n()
	if k := Kind(n.meta & kindMask); k != Array && k != Object {
		return 0
	}
	return int(n.meta >> countShift)
}

// Get returns the member of an Object named key.
func (v Value) Get(key string) (Value, bool) {
	if v.Kind() != Object {
		return Value{}, false
	}
	for it := v.Iter(); it.Next(); {
		if it.Key() == key {
			return it.Value(), true
		}
	}
	return Value{}, false
}

// Iter returns an iterator over the items of an Array or the members of an
// Object, in document order:
//
//	for it := v.Iter(); it.Next(); {
//		use(it.Index(), it.Key(), it.Value())
//	}
func (v Value) Iter() Iter {
	n := v.n()
	k := Kind(n.meta & kindMask)
	if k != Array && k != Object {
		return Iter{}
	}
	it := Iter{d: v.d, at: v.i + 1, end: n.next}
	if k == Object {
		it.state = iterObject
	}
	return it
}

// Iter walks the children of an Array or Object. Its zero value is an empty
// iteration.
//
// It has four fields, the most the compiler keeps in registers, since
// every walk over a document runs through it.
type Iter struct {
	d       *doc
	at, end uint32 // the next child's first node, and the end of the container
	// state packs the current value's node (low 32 bits), the current
	// index plus one (bits 32-62) and whether the container is an object
	// (bit 63; a member's name node precedes its value node).
	state uint64
}

const (
	iterObject  = 1 << 63
	iterIndex1  = 1 << 32
	iterCurMask = 1<<32 - 1
)

// Next advances to the next child and reports whether there is one.
func (it *Iter) Next() bool {
	if it.d == nil || it.at >= it.end {
		return false
	}
	cur := it.at + uint32(it.state>>63) // skip a member's name node
	it.at = it.d.nodes[cur].next
	it.state = (it.state&^iterCurMask + iterIndex1) | uint64(cur)
	return true
}

// Index returns the position of the current child (0 for the first).
func (it *Iter) Index() int { return int(it.state>>32&(1<<31-1)) - 1 }

// Key returns the current member's name ("" for array items).
func (it *Iter) Key() string {
	if it.state&iterObject == 0 {
		return ""
	}
	return Value{it.d, uint32(it.state) - 1}.Str()
}

// keyNode returns the node of the current member's name.
func (it *Iter) keyNode() uint32 { return uint32(it.state) - 1 }

// Value returns the current child.
func (it *Iter) Value() Value { return Value{it.d, uint32(it.state)} }

// Member is one name/value pair of an Object.
type Member struct {
	Key   string
	Value Value
}

// Member returns the current member of an Object.
func (it *Iter) Member() Member { return Member{it.Key(), it.Value()} }
