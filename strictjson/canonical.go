package strictjson

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// AppendCanonical appends the RFC 8785 (JSON Canonicalization Scheme) form
// of v to dst and returns the extended slice.
//
// Object members are sorted by the UTF-16 code units of their names, strings
// escape only '"', '\\' and control characters, and every number is written
// as ECMAScript writes the IEEE-754 double nearest its text: 5, 5.0 and 5e0
// all become 5, and -0 becomes 0. Array order is kept.
//
// Two kinds of number are written exactly as they appear in the document.
// A plain integer (no fraction, no exponent) that RFC 8785 would write as
// another integer: one a double cannot hold exactly, such as
// 9007199254740993, which RFC 8785 rounds to a double another integer
// shares, and one a double holds but ECMAScript writes rounded, such as
// 18446744073709551616 (2^64, which RFC 8785 writes 18446744073709552000,
// itself an integer kept as written); a hash must keep identifiers apart. And a
// number beyond the IEEE-754 double range (such as 1e400), which RFC 8785
// cannot represent, so that every parsed value canonicalizes and the
// output stays valid JSON. The errors that remain are defensive (*Error with ErrSyntax,
// ErrInvalidUTF8 or ErrDuplicateKey for a tree Parse would not build); on
// error dst is returned with its original length.
//
// AppendCanonical never modifies v, and it is safe to call concurrently,
// also on the same v. It does not recurse into anything but v's own Items
// and Members, so its depth is bounded by v's.
func AppendCanonical(dst []byte, v Value) ([]byte, error) {
	e := encoderPool.Get().(*encoder)
	e.buf = dst
	werr := e.value(v)
	out := e.buf
	e.release()
	if werr != nil {
		return dst, werr.finish()
	}
	return out, nil
}

// smallObject is the member count up to which objects are sorted by
// insertion, which beats a general sort on short inputs.
const smallObject = 16

// encoder holds the scratch state of one canonicalization. Encoders are
// pooled so that steady-state calls allocate nothing but the output.
type encoder struct {
	buf []byte
	// order is a stack of members: each object being written pushes its
	// members, sorts them in place and pops them when done.
	order []memberRef
	// noVerbatim makes the encoder rebuild values the parser marked as
	// canonical as written, so tests can check that mark.
	noVerbatim bool
	// recOrder is the order object found by sorting the members of the
	// last record (see object) it sorted: a permutation of its recCount
	// members.
	recOrder [smallObject]uint8
	recCount int
	// recEnd is the node just past the last object written, when that
	// object was a record written in recOrder; 0 when it was not.
	recEnd uint32
}

var encoderPool = sync.Pool{New: func() any { return new(encoder) }}

func (e *encoder) release() {
	e.buf = nil
	e.noVerbatim = false
	e.recCount, e.recEnd = 0, 0
	e.order = e.order[:0]
	if cap(e.order) > 1<<16 {
		e.order = nil
	}
	encoderPool.Put(e)
}

// walkError is an error found while walking a value. Its pointer tokens are
// collected innermost first while the recursion unwinds.
type walkError struct {
	tokens []string
	kind   ErrorKind
	offset int
	msg    string
}

func (w *walkError) finish() error {
	var b strings.Builder
	for i := len(w.tokens) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(EscapePointerToken(w.tokens[i]))
	}
	return &Error{Kind: w.kind, Offset: w.offset, Pointer: b.String(), Msg: w.msg}
}

func (e *encoder) value(v Value) *walkError {
	if n := v.n(); n.meta&flagVerbatim != 0 && !e.noVerbatim {
		e.buf = append(e.buf, v.d.src[n.start:n.end]...)
		return nil
	}
	switch v.Kind() {
	case Null:
		e.buf = append(e.buf, "null"...)
	case Bool:
		if v.Bool() {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case Number:
		var st numberStatus
		text := v.Str()
		e.buf, st = appendNumberText(e.buf, text)
		switch st {
		case numberTooLarge:
			e.buf = append(e.buf, text...) // beyond RFC 8785: kept as written
		case numberSyntax:
			return &walkError{kind: ErrSyntax, offset: v.Start(),
				msg: "number text " + strconv.Quote(text) + " is not a JSON number"}
		}
	case String:
		if !e.strValue(v) {
			return &walkError{kind: ErrInvalidUTF8, offset: v.Start(), msg: "string contains invalid UTF-8"}
		}
	case Array:
		e.buf = append(e.buf, '[')
		for it := v.Iter(); it.Next(); {
			if it.Index() > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(it.Value()); err != nil {
				err.tokens = append(err.tokens, strconv.Itoa(it.Index()))
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case Object:
		if err := e.object(v); err != nil {
			return err
		}
	default:
		return &walkError{kind: ErrSyntax, offset: v.Start(),
			msg: "value has unknown kind " + strconv.Itoa(int(v.Kind()))}
	}
	return nil
}

// memberRef is a member of an object being written: its name and the
// index of its name node (the value node follows it).
type memberRef struct {
	key  string
	node uint32
}

func (e *encoder) object(v Value) *walkError {
	d := v.d
	n := v.n()
	count := int(n.meta >> countShift)
	first := v.i + 1 // the first name node
	// A record: at most smallObject members, all scalars, so that member
	// k's name node is first+2k. Arrays of records tend to repeat their
	// members in one order, so the order a record's members sort into is
	// kept and tried on the next record with as many members.
	record := count <= smallObject && n.next == first+2*uint32(count)
	// An item that repeats the names of the item before it (RepeatsNames),
	// when that item was the last object written and a record written in
	// recOrder, sorts into the same order: no need to check it.
	if record && e.recCount == count && e.record(d, first, e.recOrder[:count], v.RepeatsNames() && e.recEnd == v.i) {
		e.recEnd = n.next
		return nil
	}
	// A small object's members are sorted in an array on the goroutine
	// stack, where storing their names needs no GC write barrier; larger
	// ones go on the encoder's heap stack.
	var local [smallObject]memberRef
	ms, mark := local[:0], len(e.order)
	if count > smallObject {
		for j := first; j < n.next; j = d.nodes[j+1].next {
			e.order = append(e.order, memberRef{d.key(j), j})
		}
		ms = e.order[mark:]
	} else {
		for j := first; j < n.next; j = d.nodes[j+1].next {
			ms = append(ms, memberRef{d.key(j), j})
		}
	}
	sortMembers(ms)
	e.buf = append(e.buf, '{')
	for j, m := range ms {
		if j > 0 {
			e.buf = append(e.buf, ',')
			if ms[j-1].key == m.key {
				return &walkError{tokens: []string{m.key}, kind: ErrDuplicateKey, offset: Value{d, m.node + 1}.Start(),
					msg: "duplicate member name " + strconv.Quote(m.key)}
			}
		}
		if err := e.member(d, m.node); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	e.recEnd = 0
	if record {
		for j, m := range ms {
			e.recOrder[j] = uint8((m.node - first) / 2)
		}
		e.recCount, e.recEnd = count, n.next
	}
	e.order = e.order[:mark]
	return nil
}

// record writes the record (see object) whose first name node is first
// with its members in order, when that order sorts them, and reports
// whether it did; when it reports false it has written nothing.
//
// An order sorts a record's members exactly when each name in it sorts
// strictly before the next: the sorted order of distinct names is the
// only increasing one, and a duplicate name is never strictly before
// itself. Checking that costs little: names as written mostly differ in
// their first two characters. A record this fails on, and one with a
// member in error, is left to object's sort, which finds the order or
// the error object finds for any object.
//
// Most records are compact, with names and values as written: then each
// member's text from its name to the end of its value is already
// canonical, and so is the comma before it. A member that follows the one
// before it in the document too (userId and value in
// {"id":…,"type":…,"timestamp":…,"userId":…,"value":…}) starts where that
// one's text ends, so the two are copied together. The first pass over
// the members checks the order and finds these runs of text without a
// call, so that the compiler keeps its values in registers; the copies
// come after, one per run. When sorted is set, the order is known to sort
// the members and is not checked.
func (e *encoder) record(d *doc, first uint32, order []uint8, sorted bool) bool {
	var runs [smallObject][2]uint32 // spans of src to copy, in order
	nruns := 0
	copied := !e.noVerbatim // every member so far is in runs
	undecided := false      // some names' keys did not decide their order
	var prevKey uint16      // the nameKey of the name before
	for j, k := range order {
		at := first + 2*uint32(k) // the name node
		name, val := &d.nodes[at], &d.nodes[at+1]
		if !sorted {
			key := d.nameKey(name)
			if j > 0 {
				if prevKey == 0 || key == 0 || prevKey == key {
					undecided = true
				} else if prevKey > key {
					return false
				}
			}
			prevKey = key
		}
		if !copied || name.meta&flagEscape != 0 || val.meta&flagVerbatim == 0 || val.start != name.end+1 {
			copied = false
			continue
		}
		start := name.start
		if j > 0 {
			if d.src[start-1] != ',' { // white space before the name
				copied = false
				continue
			}
			start-- // the comma as written, directly before the name
		}
		if nruns > 0 && runs[nruns-1][1] == start {
			runs[nruns-1][1] = val.end
		} else {
			runs[nruns] = [2]uint32{start, val.end}
			nruns++
		}
	}
	if undecided && !d.sorts(first, order) {
		return false
	}
	if copied {
		buf := append(e.buf, '{')
		for _, r := range runs[:nruns] {
			buf = append(buf, d.src[r[0]:r[1]]...)
		}
		e.buf = append(buf, '}')
		return true
	}
	mark := len(e.buf)
	e.buf = append(e.buf, '{')
	for j, k := range order {
		if j > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.member(d, first+2*uint32(k)); err != nil {
			e.buf = e.buf[:mark]
			return false
		}
	}
	e.buf = append(e.buf, '}')
	return true
}

// sorts reports whether order sorts the record whose first name node is
// first: whether each name in it sorts strictly before the next.
func (d *doc) sorts(first uint32, order []uint8) bool {
	for j := 1; j < len(order); j++ {
		if CompareKeys(d.key(first+2*uint32(order[j-1])), d.key(first+2*uint32(order[j]))) >= 0 {
			return false
		}
	}
	return true
}

// nameKey returns the first two bytes of the name n as written, big-endian
// (the second 0 for a name of one character), when both are ASCII: two
// such names whose keys differ sort as their keys do, since their first
// characters are code units of their own. It returns 0 for a name
// escaped, empty or starting with a byte beyond ASCII.
func (d *doc) nameKey(n *node) uint16 {
	if n.meta&flagEscape != 0 || n.end-n.start < 3 {
		return 0
	}
	c0, c1 := d.src[n.start+1], d.src[n.start+2]
	if c1 == '"' { // the closing quote: a name of one character sorts before longer ones it starts
		c1 = 0
	}
	if c0|c1 >= utf8.RuneSelf {
		return 0
	}
	return uint16(c0)<<8 | uint16(c1)
}

// member writes the member whose name node is at node: its name, a colon
// and its value.
func (e *encoder) member(d *doc, node uint32) *walkError {
	if name, val := &d.nodes[node], &d.nodes[node+1]; name.meta&flagEscape == 0 && val.meta&flagVerbatim != 0 && !e.noVerbatim {
		// Both as written, the common case; in compact text, with only
		// the colon between them, one copy.
		if val.start == name.end+1 {
			e.buf = append(e.buf, d.src[name.start:val.end]...)
			return nil
		}
		b := append(e.buf, d.src[name.start:name.end]...)
		e.buf = append(append(b, ':'), d.src[val.start:val.end]...)
		return nil
	}
	if !e.strValue(Value{d, node}) {
		return &walkError{tokens: []string{d.key(node)}, kind: ErrInvalidUTF8, offset: Value{d, node + 1}.Start(),
			msg: "member name contains invalid UTF-8"}
	}
	e.buf = append(e.buf, ':')
	if err := e.value(Value{d, node + 1}); err != nil {
		err.tokens = append(err.tokens, d.key(node))
		return err
	}
	return nil
}

// key returns the decoded text of the member-name node at i.
func (d *doc) key(i uint32) string {
	n := &d.nodes[i]
	if n.meta&flagEscape != 0 {
		return d.esc[n.meta>>countShift]
	}
	return d.src[n.start+1 : n.end-1]
}

// sortMembers orders ms by the UTF-16 code units of the names.
func sortMembers(ms []memberRef) {
	if len(ms) <= smallObject {
		for i := 1; i < len(ms); i++ {
			x := ms[i]
			j := i
			for j > 0 && CompareKeys(ms[j-1].key, x.key) > 0 {
				ms[j] = ms[j-1]
				j--
			}
			ms[j] = x
		}
		return
	}
	slices.SortFunc(ms, func(a, b memberRef) int { return CompareKeys(a.key, b.key) })
}

// strValue appends a String value. One written without escapes is already
// canonical as it stands in the document: the parser refused raw control
// characters and invalid UTF-8, and it has no quote or backslash inside.
func (e *encoder) strValue(v Value) bool {
	n := v.n()
	if n.meta&flagEscape == 0 {
		e.buf = append(e.buf, v.d.src[n.start:n.end]...)
		return true
	}
	return e.str(v.Str())
}

// AppendCanonicalString appends s as an RFC 8785 string. It reports false
// (and appends nothing) when s is not valid UTF-8.
func AppendCanonicalString(dst []byte, s string) ([]byte, bool) {
	e := encoder{buf: dst}
	if !e.str(s) {
		return dst, false
	}
	return e.buf, true
}

// CompareKeys orders member names as RFC 8785 does: by their UTF-16 code
// units.
func CompareKeys(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	return cmp.Compare(utf16Weight(a[i]), utf16Weight(b[i]))
}

// utf16Weight moves the lead bytes of U+E000-U+FFFF above those of
// supplementary characters and leaves every other byte where it is.
func utf16Weight(c byte) int {
	if c == 0xEE || c == 0xEF {
		return int(c) + 0x100
	}
	return int(c)
}

const hexDigits = "0123456789abcdef"

// str appends s as an RFC 8785 string literal. It reports false, leaving
// e.buf in an unspecified state, when s is not valid UTF-8 (which includes
// UTF-8-encoded surrogates).
func (e *encoder) str(s string) bool {
	b, ok := AppendEscaped(append(e.buf, '"'), s, 0)
	e.buf = append(b, '"')
	return ok
}
