package pattern

import (
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// compiler turns a parsed pattern into the matcher's program, Thompson's
// construction straight into the compact instruction form. It runs on
// every request, so it builds in scratch buffers reused across compiles
// (each pooled parser holds a compiler) and allocates only the Pattern,
// its instructions and, when it has classes of more than one range, one
// array of their ranges.
type compiler struct {
	insts   []inst
	runes   []rune
	classes []classAt // the classes in runes, so that copies share ranges
	limit   int
	over    bool    // the program grew past limit
	m       machine // for analyze
}

// classAt says where a parsed class's ranges are in the program's runes:
// the copies x{n,m} makes of a class, and repeated escapes like \d, share
// them rather than repeating hundreds of ranges (\p{L}) per copy.
type classAt struct {
	first    *rune
	n        int
	from, to uint32
}

// holes lists a fragment's unset successors, threaded through those
// fields themselves as RE2's compiler does, so a fragment needs no slice
// of them. An entry is pc<<1, for out, or pc<<1|1, for arg; the field it
// names holds the next entry, and 0 ends the list (pc 0 is the fail
// instruction, never a hole).
type holes struct{ head, tail uint32 }

// frag is a compiled piece: its entry and its unset exits.
type frag struct {
	start uint32
	out   holes
}

// compileTree compiles re, whose size EstimateSize put within limit, with
// c's buffers.
func (c *compiler) compileTree(src string, re *syntax.Regexp, limit int) *Pattern {
	c.insts, c.runes, c.classes, c.limit, c.over = c.insts[:0], c.runes[:0], c.classes[:0], limit, false
	c.emit(inst{op: opFail})
	f := c.compile(re)
	m := c.emit(inst{op: opMatch})
	c.patch(f.out, m)
	var p *Pattern
	if !c.over {
		var runes []rune
		if len(c.runes) > 0 {
			runes = slices.Clone(c.runes)
		}
		p = newPattern(&c.m, src, slices.Clone(c.insts), runes, f.start)
	}
	clear(c.classes) // drop the pointers into the parse tree
	if cap(c.insts) > 1<<12 || cap(c.runes) > 1<<12 || cap(c.classes) > 1<<8 || cap(c.m.cur.sparse) > 1<<12 {
		*c = compiler{} // a large pattern's buffers are not kept
	}
	return p
}

// emit appends in and returns its pc; past the limit it only notes that.
func (c *compiler) emit(in inst) uint32 {
	if len(c.insts) >= c.limit {
		c.over = true
	}
	if c.over {
		return 0
	}
	c.insts = append(c.insts, in)
	return uint32(len(c.insts) - 1)
}

// single emits an instruction whose out is the fragment's one exit.
func (c *compiler) single(in inst) frag {
	pc := c.emit(in)
	return frag{pc, c.hole(pc, false)}
}

// hole returns the list of pc's out (or arg), which must be 0.
func (c *compiler) hole(pc uint32, arg bool) holes {
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
func (c *compiler) patch(l holes, pc uint32) {
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
func (c *compiler) join(a, b holes) holes {
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
func (c *compiler) seq(a, b frag) frag {
	c.patch(a.out, b.start)
	return frag{a.start, b.out}
}

func (c *compiler) star(x frag) frag {
	pc := c.emit(inst{op: opAlt, out: x.start})
	c.patch(x.out, pc)
	return frag{pc, c.hole(pc, true)}
}

func (c *compiler) plus(x frag) frag {
	pc := c.emit(inst{op: opAlt, out: x.start})
	c.patch(x.out, pc)
	return frag{x.start, c.hole(pc, true)}
}

func (c *compiler) quest(x frag) frag {
	pc := c.emit(inst{op: opAlt, out: x.start})
	return frag{pc, c.join(x.out, c.hole(pc, true))}
}

// compile emits re. Repetitions are expanded as EstimateSize counts them:
// x{n,} is n-1 copies and x+, x{n,m} is n copies and m-n nested optional
// ones.
func (c *compiler) compile(re *syntax.Regexp) frag {
	if c.over {
		return frag{}
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return frag{c.emit(inst{op: opFail}), holes{}}
	case syntax.OpEmptyMatch:
		return c.single(inst{op: opNop})
	case syntax.OpLiteral:
		f := c.single(inst{op: opRune1, arg: uint32(re.Rune[0])})
		if len(re.Rune) == 1 { // as the parser makes every literal
			return f
		}
		for _, r := range re.Rune[1:] {
			f = c.seq(f, c.single(inst{op: opRune1, arg: uint32(r)}))
		}
		return f
	case syntax.OpCharClass:
		return c.class(re.Rune)
	case syntax.OpAnyChar:
		return c.single(inst{op: opAny})
	case syntax.OpBeginText:
		return c.single(inst{op: opEmpty, arg: uint32(syntax.EmptyBeginText)})
	case syntax.OpEndText:
		return c.single(inst{op: opEmpty, arg: uint32(syntax.EmptyEndText)})
	case syntax.OpWordBoundary:
		return c.single(inst{op: opEmpty, arg: uint32(syntax.EmptyWordBoundary)})
	case syntax.OpNoWordBoundary:
		return c.single(inst{op: opEmpty, arg: uint32(syntax.EmptyNoWordBoundary)})
	case syntax.OpCapture:
		return c.compile(re.Sub[0])
	case syntax.OpConcat:
		f := c.compile(re.Sub[0])
		for _, sub := range re.Sub[1:] {
			f = c.seq(f, c.compile(sub))
		}
		return f
	case syntax.OpAlternate:
		f := c.compile(re.Sub[0])
		for _, sub := range re.Sub[1:] {
			g := c.compile(sub)
			pc := c.emit(inst{op: opAlt, out: f.start, arg: g.start})
			f = frag{pc, c.join(f.out, g.out)}
		}
		return f
	case syntax.OpStar:
		return c.star(c.compile(re.Sub[0]))
	case syntax.OpPlus:
		return c.plus(c.compile(re.Sub[0]))
	case syntax.OpQuest:
		return c.quest(c.compile(re.Sub[0]))
	case syntax.OpRepeat:
		return c.repeat(re.Sub[0], re.Min, re.Max)
	}
	c.over = true // no other operator is parsed
	return frag{}
}

func (c *compiler) repeat(x *syntax.Regexp, lo, hi int) frag {
	var f frag
	have := false
	add := func(g frag) {
		if have {
			f = c.seq(f, g)
		} else {
			f, have = g, true
		}
	}
	n := lo // the copies of x in a row
	if hi == -1 {
		n = lo - 1
	}
	if n > 1 && isOneInst(x) {
		add(c.row(x, n))
	} else {
		for range n {
			add(c.compile(x))
		}
	}
	if hi == -1 {
		if lo == 0 {
			add(c.star(c.compile(x)))
		} else {
			add(c.plus(c.compile(x)))
		}
		return f
	}
	var tail frag
	haveTail := false
	for range hi - lo {
		g := c.compile(x)
		if haveTail {
			g = c.seq(g, tail)
		}
		tail, haveTail = c.quest(g), true
	}
	if haveTail {
		add(tail)
	}
	if !have {
		return c.single(inst{op: opNop})
	}
	return f
}

// row compiles n copies of x, which is one instruction (the \d{4} of
// \d{4}, the [a-zA-Z0-9]{7} of [a-zA-Z0-9]{8,}), each going on to the
// next: the program the fragments of n copies make, emitted in a row
// without patching them.
func (c *compiler) row(x *syntax.Regexp, n int) frag {
	f := c.compile(x)
	in := c.insts[f.start]
	for range n - 1 {
		pc := c.emit(in)
		if c.over {
			return frag{}
		}
		c.insts[pc-1].out = pc
		f.out = c.hole(pc, false)
	}
	return f
}

// isOneInst reports whether re compiles to one rune instruction.
func isOneInst(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCharClass, syntax.OpAnyChar:
		return true
	case syntax.OpLiteral:
		return len(re.Rune) == 1
	}
	return false
}

// class compiles sorted, merged range pairs: one character, one range,
// every character, or ranges kept in c.runes.
func (c *compiler) class(rs []rune) frag {
	switch {
	case len(rs) == 2 && rs[0] == rs[1]:
		return c.single(inst{op: opRune1, arg: uint32(rs[0])})
	case len(rs) == 2 && rs[0] == 0 && rs[1] == utf8.MaxRune:
		return c.single(inst{op: opAny})
	case len(rs) == 2:
		return c.single(inst{op: opRange, arg: uint32(rs[0]), end: uint32(rs[1])})
	}
	for _, k := range c.classes {
		if k.first == &rs[0] && k.n == len(rs) {
			return c.single(inst{op: opClass, arg: k.from, end: k.to})
		}
	}
	at := uint32(len(c.runes))
	c.runes = append(c.runes, rs...)
	c.classes = append(c.classes, classAt{&rs[0], len(rs), at, uint32(len(c.runes))})
	return c.single(inst{op: opClass, arg: at, end: uint32(len(c.runes))})
}
