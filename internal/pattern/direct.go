package pattern

import (
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// compileDirect compiles the patterns schemas use most — literals, classes
// like [A-Za-z0-9_-] and \d \w \s, ".", groups, alternation, the
// quantifiers * + ? {n} {n,} {n,m}, and the anchors ^ and $ — straight into
// a program, without building a syntax tree first. It gives up (ok false)
// on anything else, and the caller then uses regexp/syntax, which also
// reports every syntax error. The programs it builds match exactly what
// regexp/syntax's would (FuzzMatch checks the answers against regexp).
func compileDirect(src string, limit int) (prog *syntax.Prog, size int, ok bool) {
	c := direct{src: src, limit: limit,
		insts:   make([]syntax.Inst, 0, min(2*len(src)+4, limit)),
		runeBuf: make([]rune, 0, len(src)+2)}
	c.emit(syntax.Inst{Op: syntax.InstFail})
	f, ok := c.alternation(0)
	if !ok || c.pos != len(src) {
		return nil, 0, false
	}
	m := c.emit(syntax.Inst{Op: syntax.InstMatch}) // before the check: it counts too
	if c.over {
		return nil, len(c.insts) + 1, true
	}
	c.patch(f.holes, m)
	return &syntax.Prog{Inst: c.insts, Start: int(f.start)}, len(c.insts), true
}

// hole is an instruction's unset successor: Out, or Arg when arg is set.
type hole struct {
	pc  uint32
	arg bool
}

// frag is a compiled piece: its entry and its unset exits.
type frag struct {
	start uint32
	holes []hole
}

type direct struct {
	src     string
	pos     int
	insts   []syntax.Inst
	limit   int
	over    bool   // the program grew past limit; keep parsing only to check syntax
	runeBuf []rune // backing store for one-rune instructions
}

// rune1 returns a one-element rune slice for an InstRune1.
func (c *direct) rune1(r rune) []rune {
	if len(c.runeBuf) == cap(c.runeBuf) {
		c.runeBuf = make([]rune, 0, 16)
	}
	c.runeBuf = append(c.runeBuf, r)
	n := len(c.runeBuf)
	return c.runeBuf[n-1 : n : n]
}

func (c *direct) emit(in syntax.Inst) uint32 {
	if len(c.insts) >= c.limit {
		c.over = true
		return 0
	}
	c.insts = append(c.insts, in)
	return uint32(len(c.insts) - 1)
}

func (c *direct) patch(hs []hole, to uint32) {
	if c.over {
		return
	}
	for _, h := range hs {
		if h.arg {
			c.insts[h.pc].Arg = to
		} else {
			c.insts[h.pc].Out = to
		}
	}
}

func (c *direct) nop() frag {
	pc := c.emit(syntax.Inst{Op: syntax.InstNop})
	return frag{pc, []hole{{pc: pc}}}
}

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
		pc := c.emit(syntax.Inst{Op: syntax.InstAlt, Out: f.start, Arg: g.start})
		f = frag{pc, append(f.holes, g.holes...)}
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
		c.patch(f.holes, g.start)
		f.holes = g.holes
	}
	if empty {
		return c.nop(), true
	}
	return f, true
}

// repeat parses an atom and its quantifier, if any.
func (c *direct) repeat(depth int) (frag, bool) {
	atomStart := c.pos
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
	again := func() frag { // a fresh copy of the atom
		save := c.pos
		c.pos = atomStart
		g, _ := c.atom(depth)
		c.pos = save
		return g
	}
	return c.counted(f, again, lo, hi), true
}

// counted builds x{lo,hi} (hi -1: unbounded) the way RE2 expands it: lo
// copies, then x* or hi-lo nested optional copies.
func (c *direct) counted(first frag, again func() frag, lo, hi int) frag {
	copies := []frag{first}
	next := func() frag {
		if len(copies) > 0 {
			f := copies[0]
			copies = copies[1:]
			return f
		}
		return again()
	}
	star := func(x frag) frag {
		pc := c.emit(syntax.Inst{Op: syntax.InstAlt, Out: x.start})
		c.patch(x.holes, pc)
		return frag{pc, []hole{{pc: pc, arg: true}}}
	}
	quest := func(x frag) frag {
		pc := c.emit(syntax.Inst{Op: syntax.InstAlt, Out: x.start})
		return frag{pc, append(x.holes, hole{pc: pc, arg: true})}
	}
	seq := func(a, b frag) frag {
		c.patch(a.holes, b.start)
		return frag{a.start, b.holes}
	}
	var f frag
	have := false
	add := func(x frag) {
		if !have {
			f, have = x, true
			return
		}
		f = seq(f, x)
	}
	switch {
	case hi == -1 && lo == 0:
		return star(next())
	case hi == -1:
		for i := 0; i < lo-1; i++ {
			add(next())
		}
		x := next() // x+ = x x*
		pc := c.emit(syntax.Inst{Op: syntax.InstAlt, Out: x.start})
		c.patch(x.holes, pc)
		add(frag{x.start, []hole{{pc: pc, arg: true}}})
		return f
	}
	for i := 0; i < lo; i++ {
		add(next())
	}
	// hi-lo nested optional copies: (x(x(x)?)?)?
	var tail frag
	haveTail := false
	for i := 0; i < hi-lo; i++ {
		x := next()
		if haveTail {
			tail = quest(seq(x, tail))
		} else {
			tail, haveTail = quest(x), true
		}
	}
	if haveTail {
		add(tail)
	}
	if !have {
		return c.nop()
	}
	return f
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
		pc := c.emit(syntax.Inst{Op: syntax.InstRuneAnyNotNL})
		return frag{pc, []hole{{pc: pc}}}, true
	case '^', '$':
		c.pos++
		op := syntax.EmptyBeginText
		if b == '$' {
			op = syntax.EmptyEndText
		}
		pc := c.emit(syntax.Inst{Op: syntax.InstEmptyWidth, Arg: uint32(op)})
		return frag{pc, []hole{{pc: pc}}}, true
	case '\\':
		ranges, ok := c.escape()
		if !ok {
			return frag{}, false
		}
		return c.runes(ranges), true
	case ')', '*', '+', '?', '{', '}', ']', '|':
		return frag{}, false
	}
	r, size := utf8.DecodeRuneInString(c.src[c.pos:])
	if r == utf8.RuneError && size == 1 {
		return frag{}, false
	}
	c.pos += size
	pc := c.emit(syntax.Inst{Op: syntax.InstRune1, Rune: c.rune1(r)})
	return frag{pc, []hole{{pc: pc}}}, true
}

// runes compiles a set of rune ranges (pairs lo, hi) into one instruction.
func (c *direct) runes(ranges []rune) frag {
	in := syntax.Inst{Op: syntax.InstRune, Rune: ranges}
	if len(ranges) == 2 && ranges[0] == ranges[1] {
		in = syntax.Inst{Op: syntax.InstRune1, Rune: c.rune1(ranges[0])}
	}
	pc := c.emit(in)
	return frag{pc, []hole{{pc: pc}}}
}

// Perl classes as RE2 defines them (ASCII only).
var (
	digitRanges = []rune{'0', '9'}
	wordRanges  = []rune{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
	spaceRanges = []rune{'\t', '\n', '\f', '\r', ' ', ' '}
)

// escape parses a backslash escape outside a class: a Perl class or an
// escaped punctuation character.
func (c *direct) escape() ([]rune, bool) {
	if c.pos+1 >= len(c.src) {
		return nil, false
	}
	e := c.src[c.pos+1]
	c.pos += 2
	switch e {
	case 'd':
		return digitRanges, true
	case 'w':
		return wordRanges, true
	case 's':
		return spaceRanges, true
	case 'D':
		return negate(digitRanges), true
	case 'W':
		return negate(wordRanges), true
	case 'S':
		return negate(spaceRanges), true
	}
	if e < utf8.RuneSelf && isPunct(e) {
		return []rune{rune(e), rune(e)}, true
	}
	return nil, false
}

// isPunct reports the ASCII punctuation RE2 lets a backslash escape.
func isPunct(b byte) bool {
	return b > ' ' && b < 0x7f && !('0' <= b && b <= '9') && !('a' <= b && b <= 'z') && !('A' <= b && b <= 'Z')
}

// class parses [...] into sorted, merged ranges.
func (c *direct) class() (frag, bool) {
	c.pos++ // '['
	neg := false
	if b, more := c.peek(); more && b == '^' {
		neg = true
		c.pos++
	}
	var ranges []rune
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
		lo, set, ok := c.classChar()
		if !ok {
			return frag{}, false
		}
		if set != nil {
			ranges = append(ranges, set...)
			continue
		}
		hi := lo
		if c.pos+1 < len(c.src) && c.src[c.pos] == '-' && c.src[c.pos+1] != ']' {
			c.pos++
			var set2 []rune
			if hi, set2, ok = c.classChar(); !ok || set2 != nil || hi < lo {
				return frag{}, false
			}
		}
		ranges = append(ranges, lo, hi)
	}
	ranges = merge(ranges)
	if neg {
		ranges = negate(ranges)
	}
	if len(ranges) == 0 {
		pc := c.emit(syntax.Inst{Op: syntax.InstFail})
		return frag{pc, nil}, true
	}
	return c.runes(ranges), true
}

// classChar parses one class member: a character, an escaped one, or a
// Perl class (returned as set).
func (c *direct) classChar() (r rune, set []rune, ok bool) {
	if c.src[c.pos] == '\\' {
		if c.pos+1 >= len(c.src) {
			return 0, nil, false
		}
		switch e := c.src[c.pos+1]; e {
		case 'd', 'w', 's', 'D', 'W', 'S':
			set, ok := c.escape()
			return 0, set, ok
		default:
			if isPunct(e) {
				c.pos += 2
				return rune(e), nil, true
			}
			return 0, nil, false
		}
	}
	r, size := utf8.DecodeRuneInString(c.src[c.pos:])
	if r == utf8.RuneError && size == 1 {
		return 0, nil, false
	}
	c.pos += size
	return r, nil, true
}

// merge sorts range pairs and joins the ones that overlap or touch.
func merge(r []rune) []rune {
	type span struct{ lo, hi rune }
	spans := make([]span, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		spans = append(spans, span{r[i], r[i+1]})
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.lo - b.lo) })
	out := make([]rune, 0, len(r))
	for _, s := range spans {
		if n := len(out); n > 0 && s.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], s.hi)
			continue
		}
		out = append(out, s.lo, s.hi)
	}
	return out
}

// negate returns the complement of sorted, merged ranges within all runes.
func negate(r []rune) []rune {
	out := make([]rune, 0, len(r)+2)
	next := rune(0)
	for i := 0; i+1 < len(r); i += 2 {
		if r[i] > next {
			out = append(out, next, r[i]-1)
		}
		next = r[i+1] + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, next, utf8.MaxRune)
	}
	return out
}
