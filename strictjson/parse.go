package strictjson

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Limits bounds a document while it is parsed. A zero field means no limit
// of that kind.
type Limits struct {
	// MaxDepth is the deepest nesting allowed: the top-level value is level 1
	// and every value, scalar or not, is one level below its container.
	MaxDepth int
	// MaxNodes is the largest number of values allowed; every value counts
	// as one node (object keys do not).
	MaxNodes int
}

// ErrorKind classifies a parse error.
type ErrorKind uint8

// The kinds of parse error.
const (
	ErrSyntax       ErrorKind = iota // not JSON
	ErrDuplicateKey                  // an object member name appears twice
	ErrInvalidUTF8                   // invalid UTF-8 or a lone surrogate escape
	ErrDepth                         // Limits.MaxDepth exceeded
	ErrNodes                         // Limits.MaxNodes exceeded
)

// Error describes why a document was rejected.
type Error struct {
	Kind ErrorKind
	// Offset is the byte offset at which the problem was found.
	Offset int
	// Pointer is the RFC 6901 JSON Pointer of the value being parsed.
	Pointer string
	// Msg says what was expected and what was found.
	Msg string

	tokens []string // pointer tokens, innermost first, while unwinding
}

func (e *Error) Error() string {
	return "json: " + e.Msg + " at byte " + strconv.Itoa(e.Offset)
}

type parser struct {
	src   string
	data  []byte // the same bytes as src, for loading eight at a time
	pos   int
	depth int
	nodes int // values seen, for Limits.MaxNodes
	lim   Limits
	tape  []node              // scratch tape, copied out at the end
	esc   []string            // decoded escaped strings
	buf   []byte              // scratch for decoding escapes
	spare map[string]struct{} // a cleared member-name set, reused by large objects
	// bent counts what keeps text from being canonical as written: white
	// space, escapes, numbers not in shortest form, members out of order.
	// A container during which it did not grow is marked flagVerbatim.
	bent int
	// pred is the shape array predicts the next object has (see object),
	// and unordered the index of the first name out of order in the object
	// closed last (its number of members if none), from which array
	// builds it.
	pred      shape
	unordered int
}

// parserPool recycles parsers so that their scratch tape is not grown again
// on every document.
var parserPool = sync.Pool{New: func() any { return new(parser) }}

// release returns p to the pool, dropping references into the document.
func (p *parser) release() {
	p.tape, p.esc, p.src, p.data = p.tape[:0], nil, "", nil
	if cap(p.tape) > maxPooledTape {
		p.tape = nil
	}
	parserPool.Put(p)
}

// maxDocBytes is the longest document Parse reads, so that every count
// fits the bits of node.meta above countShift: an array of n items takes
// at least 2n-1 bytes, an object of n members more, and an escaped string
// (whose index in doc.esc the same bits hold) at least four. It is a
// variable so that tests can lower it.
var maxDocBytes = 2*(1<<(32-countShift)-1) - 1

// hardMaxDepth keeps recursion bounded whatever the caller's limits are.
const hardMaxDepth = 10000

// Parse parses data as one JSON document and returns its top-level value.
// It rejects empty input, trailing data (other than white space), invalid
// UTF-8, lone surrogates in escapes, duplicate object keys and documents
// beyond lim.
//
// The returned tree refers to data without copying it: data must not be
// modified while the tree is in use.
func Parse(data []byte, lim Limits) (Value, error) { return parse(data, lim, false) }

// ParseScratch is Parse for a tree that is needed only briefly. Its nodes
// are the parser's scratch tape, handed over instead of copied, and
// Release hands them back for the next document, so that parsing one
// document after another allocates no nodes. No Value of the tree may be
// used after Release: reading one panics.
func ParseScratch(data []byte, lim Limits) (Value, error) { return parse(data, lim, true) }

// tapePool holds the tapes of released scratch trees.
var tapePool sync.Pool // of *[]node

// Release gives the nodes of a tree from ParseScratch back for reuse; v
// may be any value of the tree. It does nothing for a tree from Parse.
// Call it once, after every reader of the tree is done: it is the one
// method of Value that is not safe for concurrent use, and Values of the
// tree are not to be used afterwards.
func (v Value) Release() {
	d := v.d
	if d == nil || !d.scratch || d.nodes == nil {
		return
	}
	tape, box := d.nodes[:0], d.box
	d.nodes, d.box = nil, nil
	if cap(tape) <= maxPooledTape {
		if box == nil {
			box = new([]node)
		}
		*box = tape
		tapePool.Put(box)
	}
}

// maxPooledTape is the capacity of the largest tape kept for reuse, in
// nodes.
const maxPooledTape = 1 << 16

func parse(data []byte, lim Limits, scratch bool) (Value, error) {
	p := parserPool.Get().(*parser)
	defer p.release()
	p.src, p.pos, p.depth, p.nodes, p.lim, p.bent = unsafe.String(unsafe.SliceData(data), len(data)), 0, 0, 0, lim, 0
	p.data, p.pred = data, shape{}
	if p.lim.MaxDepth <= 0 || p.lim.MaxDepth > hardMaxDepth {
		p.lim.MaxDepth = hardMaxDepth
	}
	if p.tape == nil { // a new parser, or its tape went to a tree: grown once, not doubled from nothing
		p.tape = make([]node, 0, min(len(data)/8+16, maxPooledTape))
	}
	if len(data) > maxDocBytes {
		p.pos = maxDocBytes
		return Value{}, p.fail(ErrNodes, "expected a document of at most "+strconv.Itoa(maxDocBytes)+" bytes, found "+strconv.Itoa(len(data)))
	}
	p.skipSpace()
	if p.pos == len(p.src) {
		return Value{}, p.fail(ErrSyntax, "expected a JSON value, found end of input")
	}
	if err := p.value(); err != nil {
		return Value{}, finish(err)
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return Value{}, finish(p.fail(ErrSyntax, "expected end of input after the top-level value, found "+p.found()))
	}
	d := &doc{src: p.src, esc: p.esc, scratch: scratch}
	if scratch {
		d.nodes, p.tape = p.tape, nil
		if box, ok := tapePool.Get().(*[]node); ok { // the box takes d.nodes back on Release
			p.tape, *box, d.box = *box, nil, box
		}
	} else {
		d.nodes = make([]node, len(p.tape))
		copy(d.nodes, p.tape)
	}
	return Value{d: d}, nil
}

func finish(err *Error) error {
	var b strings.Builder
	for i := len(err.tokens) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(EscapePointerToken(err.tokens[i]))
	}
	err.Pointer = b.String()
	err.tokens = nil
	return err
}

// EscapePointerToken escapes one RFC 6901 reference token.
func EscapePointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func (p *parser) fail(kind ErrorKind, msg string) *Error {
	return &Error{Kind: kind, Offset: p.pos, Msg: msg}
}

// found describes what is at the current position, for messages.
func (p *parser) found() string {
	if p.pos >= len(p.src) {
		return "end of input"
	}
	c := p.src[p.pos]
	if c < 0x20 || c >= 0x7f {
		return "byte 0x" + strconv.FormatUint(uint64(c), 16)
	}
	return strconv.Quote(string(c))
}

// peek skips white space and returns the byte at p.pos, or 0 at the end
// of input. Callers compare it with punctuation, which 0 is not, and let
// found tell the end of input from a NUL byte; so one load serves both the
// white space test and the punctuation test.
func (p *parser) peek() byte {
	if p.pos < len(p.src) {
		if c := p.src[p.pos]; c > ' ' {
			return c // the common case, compact JSON: inlined, no loop
		}
	}
	p.skipSpaceLoop()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *parser) skipSpace() {
	if p.pos >= len(p.src) || p.src[p.pos] > ' ' {
		return // the common case, compact JSON: inlined, no loop
	}
	p.skipSpaceLoop()
}

func (p *parser) skipSpaceLoop() {
	start := p.pos
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
			continue
		}
		break
	}
	if p.pos != start {
		p.bent++
	}
}

// emit appends a leaf node and returns its index.
func (p *parser) emit(kind Kind, flags uint32, start, end int) {
	i := uint32(len(p.tape))
	p.tape = append(p.tape, node{start: uint32(start), end: uint32(end), next: i + 1, meta: uint32(kind) | flags})
}

func (p *parser) value() *Error {
	p.nodes++
	if p.lim.MaxNodes > 0 && p.nodes > p.lim.MaxNodes {
		return p.fail(ErrNodes, "document has more than "+strconv.Itoa(p.lim.MaxNodes)+" values")
	}
	if p.pos >= len(p.src) {
		return p.fail(ErrSyntax, "expected a JSON value, found end of input")
	}
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case p.depth >= p.lim.MaxDepth: // a scalar sits one level below its container
		return p.fail(ErrDepth, "document is nested deeper than "+strconv.Itoa(p.lim.MaxDepth)+" levels")
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", Bool, flagTrue|flagVerbatim, start)
	case c == 'f':
		return p.literal("false", Bool, flagVerbatim, start)
	case c == 'n':
		return p.literal("null", Null, flagVerbatim, start)
	}
	return p.fail(ErrSyntax, "expected a JSON value, found "+p.found())
}

func (p *parser) literal(word string, kind Kind, flags uint32, start int) *Error {
	if !strings.HasPrefix(p.src[p.pos:], word) {
		return p.fail(ErrSyntax, "expected a JSON value, found "+p.found())
	}
	p.pos += len(word)
	p.emit(kind, flags, start, p.pos)
	return nil
}

func (p *parser) enter() *Error {
	p.depth++
	if p.depth > p.lim.MaxDepth {
		return p.fail(ErrDepth, "document is nested deeper than "+strconv.Itoa(p.lim.MaxDepth)+" levels")
	}
	return nil
}

// open reserves the node of a container and returns its index.
func (p *parser) open(kind Kind) uint32 {
	i := uint32(len(p.tape))
	p.tape = append(p.tape, node{start: uint32(p.pos), meta: uint32(kind)})
	p.pos++ // '{' or '['
	return i
}

// close completes the node of a container with count children. bent is
// p.bent as it was when the container opened.
func (p *parser) close(i uint32, count, bent int) {
	n := &p.tape[i]
	n.end = uint32(p.pos)
	n.next = uint32(len(p.tape))
	n.meta |= uint32(count) << countShift
	if p.bent == bent {
		n.meta |= flagVerbatim
	}
	p.depth--
}

// keyText returns the text of the member-name node at i.
func (p *parser) keyText(i uint32) string {
	n := &p.tape[i]
	if n.meta&flagEscape != 0 {
		return p.esc[n.meta>>countShift]
	}
	return p.src[n.start+1 : n.end-1]
}

func (p *parser) object() *Error {
	if err := p.enter(); err != nil {
		return err
	}
	obj := p.open(Object)
	bent := p.bent
	if p.peek() == '}' {
		p.pos++
		p.close(obj, 0, bent)
		p.unordered = 0
		return nil
	}
	// An item of an array is predicted to have the names of the item
	// before it (see array), for as long as it does: next is the name
	// node of the predicted next name. The names of a shape parsed without
	// error, so while this object's names are the same, none is a
	// duplicate and they go out of order where the shape's did.
	//
	// The rest of each member is parsed as in objectRest, inline in both:
	// a call per member here costs about 1% of Check on events_200_valid,
	// there about 1.5% on web_search_valid, a small request.
	pred := p.pred
	p.pred = shape{} // for this object only, not for the ones in it
	count, next := 0, pred.first
	for count < pred.n {
		p.skipSpace()
		keyNode := uint32(len(p.tape))
		if !p.repeatName(next) {
			break
		}
		next = p.tape[next+1].next
		if count == pred.unordered {
			p.bent++ // canonical form sorts the members
		}
		if p.peek() != ':' {
			return p.fail(ErrSyntax, "expected ':' after a member name, found "+p.found())
		}
		p.pos++
		p.skipSpace()
		if err := p.value(); err != nil {
			err.tokens = append(err.tokens, p.keyText(keyNode))
			return err
		}
		count++
		c := p.peek()
		if c == ',' {
			p.pos++
			continue
		}
		if c == '}' {
			p.pos++
			p.close(obj, count, bent)
			if count == pred.n { // every name as predicted, and no more
				p.tape[obj].meta |= flagRepeat
			}
			p.unordered = min(pred.unordered, count)
			return nil
		}
		return p.fail(ErrSyntax, "expected ',' or '}' after an object member, found "+p.found())
	}
	return p.objectRest(obj, count, bent, min(pred.unordered, count))
}

// objectRest parses the members of the object at obj from the one after
// the first count, whose names were predicted; unordered is the index of
// the first of those out of order, count if none.
func (p *parser) objectRest(obj uint32, count, bent, unordered int) *Error {
	var seen map[string]struct{} // built once an object grows past a few members
	var names [fewNames]string   // the first names, where comparing them needs no look at the tape
	prev := ""                   // the previous member name
	for k, j := 0, obj+1; k < count; k, j = k+1, p.tape[j+1].next {
		prev = p.keyText(j)
		if k < fewNames {
			names[k] = prev
		}
	}
	ordered := unordered == count // the names so far are strictly increasing
	for {
		if p.peek() != '"' {
			return p.fail(ErrSyntax, "expected a member name in double quotes, found "+p.found())
		}
		keyPos := p.pos
		keyNode := uint32(len(p.tape))
		if err := p.str(); err != nil {
			return err
		}
		key := p.keyText(keyNode)
		if count > 0 && ordered && CompareKeys(prev, key) >= 0 {
			ordered, unordered = false, count
			p.bent++ // canonical form sorts the members
		}
		// While the names increase strictly, the new one cannot repeat an
		// earlier one; once they do not, every name is checked (and once
		// the set of seen names exists, it must see every name).
		if count < fewNames {
			names[count] = key
		}
		if (!ordered || seen != nil) && p.duplicate(&names, obj, keyNode, key, count, &seen) {
			p.pos = keyPos
			err := p.fail(ErrDuplicateKey, "duplicate member name "+strconv.Quote(key))
			err.tokens = append(err.tokens, key)
			return err
		}
		prev = key
		if p.peek() != ':' {
			return p.fail(ErrSyntax, "expected ':' after a member name, found "+p.found())
		}
		p.pos++
		p.skipSpace()
		if err := p.value(); err != nil {
			err.tokens = append(err.tokens, key)
			return err
		}
		count++
		c := p.peek()
		if c == ',' {
			p.pos++
			continue
		}
		if c == '}' {
			p.pos++
			break
		}
		return p.fail(ErrSyntax, "expected ',' or '}' after an object member, found "+p.found())
	}
	p.close(obj, count, bent)
	if ordered {
		unordered = count
	}
	p.unordered = unordered
	if seen != nil && p.spare == nil && len(seen) <= 1024 {
		clear(seen)
		p.spare = seen
	}
	return nil
}

// shape describes the member names of an object that parsed without
// error, for the parser to predict that the next object repeats them.
type shape struct {
	first     uint32 // the tape index of its first name node; 0 for no shape
	n         int    // its number of members
	unordered int    // the index of its first name out of order, n if none
}

// repeatName reports whether the member name at p.pos is the name whose
// node is at i, a name parsed earlier, byte for byte, and that name had no
// escapes; if so, it emits the name's node and moves past it. Those bytes
// passed str's checks once (no quote, backslash or control character
// inside, valid UTF-8), so they would again, and str would stop at the
// same closing quote: the node is the one str would emit, for a compare of
// a few bytes.
func (p *parser) repeatName(i uint32) bool {
	n := p.tape[i]
	start, size := int(n.start), int(n.end-n.start)
	if n.meta&flagEscape != 0 {
		return false
	}
	if size <= 16 && p.pos+16 <= len(p.data) {
		// Most names, quotes included, are at most sixteen bytes: they are
		// compared as two eight-byte words, the bytes past size shifted
		// out (the first byte is the lowest, little-endian), where a
		// string compare would call memequal. size is at least 2, so the
		// shift is at most 112.
		x, y := p.data[start:start+16], p.data[p.pos:p.pos+16] // start < p.pos
		lo := binary.LittleEndian.Uint64(x) ^ binary.LittleEndian.Uint64(y)
		hi := binary.LittleEndian.Uint64(x[8:]) ^ binary.LittleEndian.Uint64(y[8:])
		shift := uint(128 - 8*size)
		if shift >= 64 {
			lo, hi = lo<<(shift-64), 0
		}
		if lo|hi<<shift != 0 {
			return false
		}
	} else if p.pos+size > len(p.data) || p.src[start:start+size] != p.src[p.pos:p.pos+size] {
		return false
	}
	p.emit(String, flagVerbatim, p.pos, p.pos+size)
	p.pos += size
	return true
}

// fewNames is how many member names of an object the parser keeps at
// hand, on the stack, to find a repeated one; past that it builds a set.
const fewNames = 16

// duplicate reports whether key (whose name node is at keyNode) repeats a
// member name of the object at obj, which has count members so far, the
// first of them in names.
func (p *parser) duplicate(names *[fewNames]string, obj, keyNode uint32, key string, count int, seen *map[string]struct{}) bool {
	if count < fewNames {
		for _, name := range names[:count] {
			if name == key {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		if p.spare != nil {
			*seen, p.spare = p.spare, nil
		} else {
			*seen = make(map[string]struct{}, 2*count)
		}
		for j := obj + 1; j < keyNode; j = p.tape[j+1].next {
			(*seen)[p.keyText(j)] = struct{}{}
		}
	}
	if _, ok := (*seen)[key]; ok {
		return true
	}
	(*seen)[key] = struct{}{}
	return false
}

func (p *parser) array() *Error {
	if err := p.enter(); err != nil {
		return err
	}
	arr := p.open(Array)
	count, bent := 0, p.bent
	if p.peek() == ']' {
		p.pos++
		p.close(arr, 0, bent)
		return nil
	}
	var pred shape // the names of the previous item, when it is an object
	for {
		p.skipSpace()
		item := len(p.tape)
		p.pred = pred
		if err := p.value(); err != nil {
			err.tokens = append(err.tokens, strconv.Itoa(count))
			return err
		}
		pred, p.pred = shape{}, shape{}
		if n := p.tape[item]; n.meta&kindMask == uint32(Object) {
			pred = shape{first: uint32(item) + 1, n: int(n.meta >> countShift), unordered: p.unordered}
		}
		count++
		c := p.peek()
		if c == ',' {
			p.pos++
			continue
		}
		if c == ']' {
			p.pos++
			break
		}
		return p.fail(ErrSyntax, "expected ',' or ']' after an array element, found "+p.found())
	}
	p.close(arr, count, bent)
	return nil
}

func (p *parser) number() *Error {
	s, start := p.src, p.pos
	i := p.pos
	if s[i] == '-' {
		i++
	}
	body := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return p.fail(ErrSyntax, "expected a digit in a number, found "+p.found())
	}
	dot := -1 // the decimal point's offset in the text, if it has one
	if i < len(s) && s[i] == '.' {
		dot = i - start
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return p.fail(ErrSyntax, "expected a digit after the decimal point, found "+p.found())
		}
	}
	exponent := i < len(s) && (s[i] == 'e' || s[i] == 'E')
	if exponent {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return p.fail(ErrSyntax, "expected a digit in the exponent, found "+p.found())
		}
	}
	p.pos = i
	text := s[start:i]
	if dot < 0 {
		dot = len(text)
	}
	var flags uint32
	if !exponent && verbatimNumber(text, body-start, dot) {
		flags = flagVerbatim
	} else {
		p.bent++
	}
	p.emit(Number, flags, start, i)
	return nil
}

// str parses a string starting at its opening quote and emits its node.
// Strings without escapes are not copied.
func (p *parser) str() *Error {
	data := p.data
	open := p.pos
	rest := data[open+1:] // the string's bytes from the one to examine next
	for {
		// The plain run, eight bytes at a time while eight remain. The
		// loop walks a slice rather than an index so that the compiler can
		// see that every load is in bounds: each pass costs the load,
		// stopBytes and the loop test, with no bounds checks.
		for len(rest) >= 8 {
			if m := stopBytes(binary.LittleEndian.Uint64(rest)); m != 0 {
				rest = rest[bits.TrailingZeros64(m)>>3:]
				goto stop
			}
			rest = rest[8:]
		}
		rest = rest[plainTail(rest):]
		if len(rest) == 0 {
			p.pos = len(data)
			return p.fail(ErrSyntax, "expected '\"' to close a string, found end of input")
		}
	stop:
		i := len(data) - len(rest)
		switch c := rest[0]; {
		case c == '"':
			p.pos = i + 1
			p.emit(String, flagVerbatim, open, p.pos) // no escapes: canonical as written
			return nil
		case c == '\\':
			return p.escaped(open, i)
		case c < 0x20:
			p.pos = i
			return p.fail(ErrSyntax, "expected an escaped control character in a string, found "+p.found())
		}
		// Not ASCII, the only other byte at which a plain run stops.
		r, size := utf8.DecodeRuneInString(p.src[i:])
		if r == utf8.RuneError && size == 1 {
			p.pos = i
			return p.fail(ErrInvalidUTF8, "string contains invalid UTF-8")
		}
		rest = rest[size:]
	}
}

// escaped finishes str for a string with escapes, the first of them at i:
// it decodes the string into p.esc. A string whose escapes are all the
// ones RFC 8785 writes (\", \\, \b, \f, \n, \r, \t, and \u00xx in lower
// case for the other control characters) is canonical as written, and
// marked so.
func (p *parser) escaped(open, i int) *Error {
	s, data := p.src, p.data
	b := append(p.buf[:0], s[open+1:i]...)
	defer func() { p.buf = b[:0] }()
	canonical := true
	for i < len(s) {
		// The plain run up to the next quote, backslash, control
		// character or non-ASCII byte, eight bytes at a time as in str.
		j := i
		for j+8 <= len(data) {
			if m := stopBytes(binary.LittleEndian.Uint64(data[j:])); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				goto stop
			}
			j += 8
		}
		j += plainTail(data[j:]) // fewer than eight bytes are left
	stop:
		b = append(b, s[i:j]...)
		if i = j; i >= len(s) {
			break
		}
		c := s[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.esc = append(p.esc, string(b))
			flags := flagEscape | uint32(len(p.esc)-1)<<countShift
			if canonical {
				flags |= flagVerbatim
			} else {
				p.bent++ // canonical form writes the characters, not these escapes
			}
			p.emit(String, flags, open, p.pos)
			return nil
		case c == '\\':
			if i+1 >= len(s) {
				p.pos = i + 1
				return p.fail(ErrSyntax, "expected an escape character, found end of input")
			}
			switch e := s[i+1]; e {
			case '"', '\\':
				b = append(b, e)
				i += 2
			case '/':
				b = append(b, e)
				i += 2
				canonical = false
			case 'b':
				b = append(b, '\b')
				i += 2
			case 'f':
				b = append(b, '\f')
				i += 2
			case 'n':
				b = append(b, '\n')
				i += 2
			case 'r':
				b = append(b, '\r')
				i += 2
			case 't':
				b = append(b, '\t')
				i += 2
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					p.pos = i
					return p.fail(ErrSyntax, "expected four hex digits after \\u")
				}
				if canonical && !canonicalUEscape(s[i+2:i+6], r) {
					canonical = false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(0), false
					if r < 0xdc00 && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2, ok2 = hex4(s, i+2)
					}
					dec := utf16.DecodeRune(r, r2)
					if !ok2 || dec == utf8.RuneError {
						p.pos = i - 6
						return p.fail(ErrInvalidUTF8, "string contains a lone UTF-16 surrogate escape")
					}
					r = dec
					i += 6
				}
				b = utf8.AppendRune(b, r)
			default:
				p.pos = i + 1
				return p.fail(ErrSyntax, "expected a valid escape character, found "+p.found())
			}
		case c < 0x20:
			p.pos = i
			return p.fail(ErrSyntax, "expected an escaped control character in a string, found "+p.found())
		default: // not ASCII
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				p.pos = i
				return p.fail(ErrInvalidUTF8, "string contains invalid UTF-8")
			}
			b = append(b, s[i:i+size]...)
			i += size
		}
	}
	p.pos = i
	return p.fail(ErrSyntax, "expected '\"' to close a string, found end of input")
}

// canonicalUEscape reports whether hex, the four digits of a \u escape
// of r, is how RFC 8785 writes r: a control character without a short
// escape, in lower-case hex.
func canonicalUEscape(hex string, r rune) bool {
	switch r {
	case '\b', '\t', '\n', '\f', '\r':
		return false
	}
	return r < 0x20 && hex[0] == '0' && hex[1] == '0' && hex[2] == hexDigits[r>>4] && hex[3] == hexDigits[r&0xF]
}

// Masks for examining eight bytes of a string at once.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainTail returns the index in b, fewer than eight bytes of a string,
// of the first byte that is a quote, a backslash, a control character or
// not ASCII, or len(b) when there is none.
func plainTail(b []byte) int {
	for i, c := range b {
		if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return i
		}
	}
	return len(b)
}

// stopBytes marks the bytes of x (eight bytes of a string, little-endian)
// at which a plain run stops: a byte's high bit is set when it equals '"'
// or '\\' (the byte minus one borrows), is below 0x20, or is not ASCII.
// Borrows can only mark bytes above a marked one, so the lowest mark is
// exact.
//
// The textbook zero-byte test is (v-ones)&^v: the &^v drops the bytes at
// or above 0x81, which v-ones also marks. Here every such byte of q or b
// (x with '"' or '\\' flipped, neither of which has the high bit) and
// every byte of x-0x20 at or above 0xa0 comes from a byte of x at or above
// 0x80, which the final |x marks anyway; so the three &^ are dropped.
func stopBytes(x uint64) uint64 {
	q := x ^ (ones * '"')
	b := x ^ (ones * '\\')
	return ((q - ones) | (b - ones) | (x - ones*0x20) | x) & highs
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
