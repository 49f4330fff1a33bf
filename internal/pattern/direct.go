package pattern

import (
	"regexp/syntax"
	"slices"
	"sync"
	"unicode/utf8"
)

// compileDirect compiles the patterns schemas use most — literals, classes
// like [A-Za-z0-9_-] and \d \w \s, ".", groups, alternation, the
// quantifiers * + ? {n} {n,} {n,m}, and the anchors ^ and $ — straight into
// a program, without building a syntax tree first. It gives up (ok false)
// on anything else, and the caller then uses regexp/syntax, which also
// reports every syntax error. The programs it builds match exactly what
// regexp/syntax's would (FuzzMatch checks the answers against regexp).
// A nil Pattern with ok true means the program needs more than limit
// instructions; size is then limit+1.
//
// It runs on every request, so it builds the program in pooled scratch
// buffers, already in the Pattern's form, and allocates only the Pattern,
// its instructions and, when it has classes of more than one range, one
// array of their ranges.
func compileDirect(src string, limit int) (p *Pattern, size int, ok bool) {
	c := directs.Get().(*direct)
	defer c.release()
	c.src, c.pos, c.limit, c.over = src, 0, limit, false
	c.insts, c.runes = c.insts[:0], c.runes[:0]
	c.emit(inst{op: opFail})
	f, ok := c.alternation(0)
	if !ok || c.pos != len(src) {
		return nil, 0, false
	}
	m := c.emit(inst{op: opMatch})
	if c.over {
		return nil, limit + 1, true
	}
	c.patch(f.out, m)
	return c.finish(f.start), len(c.insts), true
}

// directs holds scratch compilers, so that a compile allocates nothing
// but its result.
var directs = sync.Pool{New: func() any { return new(direct) }}

// release returns c to the pool unless a large pattern grew its buffers;
// those are left to the collector rather than kept for small patterns.
func (c *direct) release() {
	if cap(c.insts) > 1<<12 || cap(c.runes) > 1<<12 || cap(c.spans) > 1<<12 {
		return
	}
	c.src = ""
	directs.Put(c)
}

// finish copies the program out of the scratch buffers. Both copies are
// of pointer-free elements, so neither needs type metadata nor scanning;
// with no class ranges there is no second copy at all.
func (c *direct) finish(start uint32) *Pattern {
	p := &Pattern{src: c.src, insts: slices.Clone(c.insts), start: start}
	if len(c.runes) > 0 {
		p.runes = slices.Clone(c.runes)
	}
	p.anchorStart = p.startCond()&syntax.EmptyBeginText != 0
	return p
}

// holes lists a fragment's unset successors, threaded through those
// fields themselves as RE2's compiler does, so a fragment needs no slice
// of them. An entry is pc<<1, for Out, or pc<<1|1, for Arg; the field it
// names holds the next entry, and 0 ends the list (pc 0 is the fail
// instruction, never a hole).
type holes struct{ head, tail uint32 }

// frag is a compiled piece: its entry and its unset exits.
type frag struct {
	start uint32
	out   holes
}

// span is one range of a class.
type span struct{ lo, hi rune }

// direct is the compiler's state, reused across compiles through directs.
type direct struct {
	src   string
	pos   int
	limit int
	over  bool   // the program grew past limit; keep parsing only to check syntax
	insts []inst // the program so far
	runes []rune // the ranges of its opClass instructions
	spans []span // the class being parsed
}

// emit appends in and returns its pc; past the limit it only notes that.
func (c *direct) emit(in inst) uint32 {
	if len(c.insts) >= c.limit {
		c.over = true
	}
	if c.over {
		return 0
	}
	c.insts = append(c.insts, in)
	return uint32(len(c.insts) - 1)
}

// single emits an instruction whose Out is the fragment's one exit.
func (c *direct) single(in inst) frag {
	pc := c.emit(in)
	return frag{pc, c.hole(pc, false)}
}

// hole returns the list of pc's Out (or Arg), which must be 0.
func (c *direct) hole(pc uint32, arg bool) holes {
	if c.over {
		return holes{}
	}
	e := pc << 1
	if arg {
		e |= 1
	}
	return holes{e, e}
}

// patch points every hole in l to pc.
func (c *direct) patch(l holes, pc uint32) {
	if c.over {
		return
	}
	for e := l.head; e != 0; {
		in := &c.insts[e>>1]
		if e&1 == 0 {
			e, in.out = in.out, pc
		} else {
			e, in.arg = in.arg, pc
		}
	}
}

// join returns the holes of a and b as one list.
func (c *direct) join(a, b holes) holes {
	switch {
	case c.over:
		return holes{}
	case a.head == 0:
		return b
	case b.head == 0:
		return a
	}
	in := &c.insts[a.tail>>1]
	if a.tail&1 == 0 {
		in.out = b.head
	} else {
		in.arg = b.head
	}
	return holes{a.head, b.tail}
}

// seq compiles a then b.
func (c *direct) seq(a, b frag) frag {
	c.patch(a.out, b.start)
	return frag{a.start, b.out}
}

// peek returns the next byte of the pattern, if any.
func (c *direct) peek() (byte, bool) {
	if c.pos < len(c.src) {
		return c.src[c.pos], true
	}
	return 0, false
}

// alternation parses concat ('|' concat)*.
func (c *direct) alternation(depth int) (frag, bool) {
	if depth > 100 {
		return frag{}, false
	}
	f, ok := c.concat(depth)
	if !ok {
		return frag{}, false
	}
	for {
		if b, more := c.peek(); !more || b != '|' {
			return f, true
		}
		c.pos++
		g, ok := c.concat(depth)
		if !ok {
			return frag{}, false
		}
		pc := c.emit(inst{op: opAlt, out: f.start, arg: g.start})
		f = frag{pc, c.join(f.out, g.out)}
	}
}

// concat parses a sequence of repeated atoms.
func (c *direct) concat(depth int) (frag, bool) {
	var f frag
	empty := true
	for {
		b, more := c.peek()
		if !more || b == '|' || b == ')' {
			break
		}
		g, ok := c.repeat(depth)
		if !ok {
			return frag{}, false
		}
		if empty {
			f, empty = g, false
			continue
		}
		f = c.seq(f, g)
	}
	if empty {
		return c.single(inst{op: opNop}), true
	}
	return f, true
}

// repeat parses an atom and its quantifier, if any.
func (c *direct) repeat(depth int) (frag, bool) {
	atomStart, pc0 := c.pos, len(c.insts)
	f, ok := c.atom(depth)
	if !ok {
		return frag{}, false
	}
	atomEnd := c.pos
	b, more := c.peek()
	if !more {
		return f, true
	}
	lo, hi := 0, 0
	switch b {
	case '*':
		lo, hi = 0, -1
		c.pos++
	case '+':
		lo, hi = 1, -1
		c.pos++
	case '?':
		lo, hi = 0, 1
		c.pos++
	case '{':
		var ok bool
		if lo, hi, ok = c.braces(); !ok {
			return frag{}, false
		}
		// Nested counted repetition has size rules of its own in
		// regexp/syntax; leave it to that path.
		for i := atomStart; i < atomEnd; i++ {
			if c.src[i] == '{' {
				return frag{}, false
			}
		}
	default:
		return f, true
	}
	if b, more := c.peek(); more && (b == '?' || b == '*' || b == '+' || b == '{') {
		return frag{}, false // lazy or doubled quantifiers: not ours
	}
	if c.src[atomStart] == '^' || c.src[atomStart] == '$' {
		return frag{}, false // a repeated empty-width assertion: not ours
	}
	return c.counted(f, pc0, lo, hi), true
}

// counted builds x{lo,hi} (hi -1: unbounded) the way RE2 expands it: lo
// copies, then x* or hi-lo nested optional copies. x is the atom just
// compiled, the instructions from pc0 on. The other copies it needs are
// appended right after it, while x's exits are still unset, so copy i is x
// moved by i*n instructions.
func (c *direct) counted(x frag, pc0, lo, hi int) frag {
	copies := hi
	if hi == -1 {
		copies = max(lo, 1)
	}
	n := len(c.insts) - pc0
	if copies > 1 && !c.over && len(c.insts)+(copies-1)*n > c.limit {
		c.over = true
	}
	if c.over {
		return frag{}
	}
	for range copies - 1 {
		c.again(pc0, n, x.out)
	}
	next := 0
	copyOf := func() frag { // the next unused copy
		d := uint32(next * n)
		next++
		f := frag{x.start + d, x.out}
		if f.out.head != 0 {
			f.out.head += 2 * d
			f.out.tail += 2 * d
		}
		return f
	}
	star := func(x frag) frag {
		pc := c.emit(inst{op: opAlt, out: x.start})
		c.patch(x.out, pc)
		return frag{pc, c.hole(pc, true)}
	}
	quest := func(x frag) frag {
		pc := c.emit(inst{op: opAlt, out: x.start})
		return frag{pc, c.join(x.out, c.hole(pc, true))}
	}
	var f frag
	have := false
	add := func(x frag) {
		if !have {
			f, have = x, true
			return
		}
		f = c.seq(f, x)
	}
	switch {
	case hi == -1 && lo == 0:
		return star(copyOf())
	case hi == -1:
		for i := 0; i < lo-1; i++ {
			add(copyOf())
		}
		x := copyOf() // x+ = x x*
		pc := c.emit(inst{op: opAlt, out: x.start})
		c.patch(x.out, pc)
		add(frag{x.start, c.hole(pc, true)})
		return f
	}
	for i := 0; i < lo; i++ {
		add(copyOf())
	}
	// hi-lo nested optional copies: (x(x(x)?)?)?
	var tail frag
	haveTail := false
	for i := 0; i < hi-lo; i++ {
		x := copyOf()
		if haveTail {
			tail = quest(c.seq(x, tail))
		} else {
			tail, haveTail = quest(x), true
		}
	}
	if haveTail {
		add(tail)
	}
	if !have {
		return c.single(inst{op: opNop})
	}
	return f
}

// again appends a copy of the n instructions from pc0, an atom whose exits
// out are still unset. Its jumps move with it; its exits hold list links,
// which move by twice as much (see holes).
func (c *direct) again(pc0, n int, out holes) {
	d := uint32(len(c.insts) - pc0)
	c.insts = append(c.insts, c.insts[pc0:pc0+n]...)
	for i := pc0 + int(d); i < len(c.insts); i++ {
		in := &c.insts[i]
		if in.out != 0 {
			in.out += d
		}
		if in.op == opAlt && in.arg != 0 {
			in.arg += d
		}
	}
	for e := out.head; e != 0; {
		from, to := &c.insts[e>>1], &c.insts[e>>1+d]
		next, link := from.out, &to.out
		if e&1 != 0 {
			next, link = from.arg, &to.arg
		}
		*link = 0 // the end of the list
		if next != 0 {
			*link = next + 2*d
		}
		e = next
	}
}

// braces parses {n}, {n,} or {n,m} with the bounds RE2 accepts.
func (c *direct) braces() (lo, hi int, ok bool) {
	i := c.pos + 1
	num := func() (int, bool) {
		start, n := i, 0
		for i < len(c.src) && c.src[i] >= '0' && c.src[i] <= '9' {
			n = n*10 + int(c.src[i]-'0')
			i++
			if n > 1000 {
				return 0, false
			}
		}
		return n, i > start && (i-start == 1 || c.src[start] != '0')
	}
	lo, ok = num()
	if !ok {
		return 0, 0, false
	}
	hi = lo
	if i < len(c.src) && c.src[i] == ',' {
		i++
		hi = -1
		if i < len(c.src) && c.src[i] != '}' {
			if hi, ok = num(); !ok || hi < lo {
				return 0, 0, false
			}
		}
	}
	if i >= len(c.src) || c.src[i] != '}' {
		return 0, 0, false
	}
	c.pos = i + 1
	return lo, hi, true
}

// atom parses one atom.
func (c *direct) atom(depth int) (frag, bool) {
	b := c.src[c.pos]
	switch b {
	case '(':
		c.pos++
		if c.pos+1 < len(c.src) && c.src[c.pos] == '?' {
			if c.src[c.pos+1] != ':' {
				return frag{}, false // flags or named groups: not ours
			}
			c.pos += 2
		}
		f, ok := c.alternation(depth + 1)
		if !ok {
			return frag{}, false
		}
		if b, more := c.peek(); !more || b != ')' {
			return frag{}, false
		}
		c.pos++
		return f, true
	case '[':
		return c.class()
	case '.':
		c.pos++
		return c.single(inst{op: opAnyNotNL}), true
	case '^', '$':
		c.pos++
		op := syntax.EmptyBeginText
		if b == '$' {
			op = syntax.EmptyEndText
		}
		return c.single(inst{op: opEmpty, arg: uint32(op)}), true
	case ')', '*', '+', '?', '{', '}', ']', '|':
		return frag{}, false
	}
	r, set, ok := c.char()
	switch {
	case !ok:
		return frag{}, false
	case set != nil:
		at := len(c.runes)
		c.runes = append(c.runes, set...)
		return c.ranges(at), true
	}
	return c.literal(r), true
}

// literal compiles one character.
func (c *direct) literal(r rune) frag {
	return c.single(inst{op: opRune1, arg: uint32(r)})
}

// ranges compiles a class whose sorted, merged ranges are c.runes[at:].
// An empty class never matches, one rune is a literal and one range fits
// in the instruction; only longer classes keep their ranges in c.runes.
func (c *direct) ranges(at int) frag {
	rs := c.runes[at:]
	if len(rs) > 2 {
		return c.single(inst{op: opClass, arg: uint32(at), end: uint32(len(c.runes))})
	}
	c.runes = c.runes[:at]
	switch {
	case len(rs) == 0:
		pc := c.emit(inst{op: opFail})
		return frag{pc, holes{}}
	case rs[0] == rs[1]:
		return c.literal(rs[0])
	}
	return c.single(inst{op: opRange, arg: uint32(rs[0]), end: uint32(rs[1])})
}

// Perl classes as RE2 defines them (ASCII only), and their complements.
var (
	digitRanges    = []rune{'0', '9'}
	wordRanges     = []rune{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
	spaceRanges    = []rune{'\t', '\n', '\f', '\r', ' ', ' '}
	notDigitRanges = negate(digitRanges)
	notWordRanges  = negate(wordRanges)
	notSpaceRanges = negate(spaceRanges)
)

// isPunct reports the ASCII punctuation RE2 lets a backslash escape.
func isPunct(b byte) bool {
	return b > ' ' && b < 0x7f && !('0' <= b && b <= '9') && !('a' <= b && b <= 'z') && !('A' <= b && b <= 'Z')
}

// class parses [...] into sorted, merged ranges and compiles them.
func (c *direct) class() (frag, bool) {
	c.pos++ // '['
	neg := false
	if b, more := c.peek(); more && b == '^' {
		neg = true
		c.pos++
	}
	spans := c.spans[:0]
	first := true
	for {
		b, more := c.peek()
		if !more {
			return frag{}, false
		}
		if b == ']' && !first {
			c.pos++
			break
		}
		if b == ']' || b == '[' {
			return frag{}, false // a literal ']' first, or [:name:]: not ours
		}
		first = false
		lo, set, ok := c.char()
		if !ok {
			return frag{}, false
		}
		if set != nil {
			for i := 0; i+1 < len(set); i += 2 {
				spans = append(spans, span{set[i], set[i+1]})
			}
			continue
		}
		hi := lo
		if c.pos+1 < len(c.src) && c.src[c.pos] == '-' && c.src[c.pos+1] != ']' {
			c.pos++
			var set2 []rune
			if hi, set2, ok = c.char(); !ok || set2 != nil || hi < lo {
				return frag{}, false
			}
		}
		spans = append(spans, span{lo, hi})
	}
	c.spans = spans // keep the grown buffer
	spans = merge(spans)
	at := len(c.runes)
	if neg {
		c.runes = appendNegated(c.runes, spans)
	} else {
		for _, s := range spans {
			c.runes = append(c.runes, s.lo, s.hi)
		}
	}
	return c.ranges(at), true
}

// char parses one character, escaped or not, or a Perl class escape
// (returned as set).
func (c *direct) char() (r rune, set []rune, ok bool) {
	if c.src[c.pos] == '\\' {
		if c.pos+1 >= len(c.src) {
			return 0, nil, false
		}
		e := c.src[c.pos+1]
		c.pos += 2
		switch e {
		case 'd':
			return 0, digitRanges, true
		case 'w':
			return 0, wordRanges, true
		case 's':
			return 0, spaceRanges, true
		case 'D':
			return 0, notDigitRanges, true
		case 'W':
			return 0, notWordRanges, true
		case 'S':
			return 0, notSpaceRanges, true
		}
		return rune(e), nil, isPunct(e)
	}
	r, size := utf8.DecodeRuneInString(c.src[c.pos:])
	if r == utf8.RuneError && size == 1 {
		return 0, nil, false
	}
	c.pos += size
	return r, nil, true
}

// merge sorts spans and joins the ones that overlap or touch, in place.
func merge(s []span) []span {
	slices.SortFunc(s, func(a, b span) int { return int(a.lo - b.lo) })
	n := 0
	for _, x := range s {
		if n > 0 && x.lo <= s[n-1].hi+1 {
			s[n-1].hi = max(s[n-1].hi, x.hi)
			continue
		}
		s[n] = x
		n++
	}
	return s[:n]
}

// appendNegated appends to dst the complement of sorted, merged spans
// within all runes, as range pairs.
func appendNegated(dst []rune, s []span) []rune {
	next := rune(0)
	for _, x := range s {
		if x.lo > next {
			dst = append(dst, next, x.lo-1)
		}
		next = x.hi + 1
	}
	if next <= utf8.MaxRune {
		dst = append(dst, next, utf8.MaxRune)
	}
	return dst
}

// negate returns the complement of sorted, merged range pairs.
func negate(r []rune) []rune {
	var s []span
	for i := 0; i+1 < len(r); i += 2 {
		s = append(s, span{r[i], r[i+1]})
	}
	return appendNegated(nil, s)
}
