// Package pattern compiles JSON Schema "pattern" regular expressions (Go's
// RE2 syntax) and matches them, for a validator that compiles a fresh schema
// on every call.
//
// It parses a pattern once, bounds the size of its program before building
// it, and matches with a small Pike VM over the regexp/syntax program. It
// answers only whether a string contains a match, which needs no capture
// tracking and none of the one-pass analysis that regexp.Compile does.
// Matching takes time linear in the input times the program size, never
// backtracking.
package pattern

import (
	"regexp/syntax"
	"sync"
	"unicode/utf8"
)

// Pattern is a compiled pattern. It is safe for concurrent use.
type Pattern struct {
	src         string
	prog        syntax.Prog // held by value: one allocation fewer per compile
	anchorStart bool        // the program can only match at the start of the text
}

// Compile parses src with Go's RE2 syntax (the flags regexp.Compile uses)
// and compiles it when its program needs at most limit instructions. It
// returns the estimated program size too; a nil Pattern with a nil error
// means the pattern is over the limit.
func Compile(src string, limit int) (*Pattern, int, error) {
	if p, size, ok := compileDirect(src, limit); ok {
		return p, size, nil
	}
	tree, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, 0, err
	}
	size := EstimateSize(tree, limit+1) + 2 // the program's fail and match instructions
	if size > limit {
		return nil, size, nil
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, size, err
	}
	return &Pattern{src: src, prog: *prog, anchorStart: prog.StartCond()&syntax.EmptyBeginText != 0}, size, nil
}

// String returns the source text of the pattern.
func (p *Pattern) String() string { return p.src }

// EstimateSize estimates how many instructions re compiles to, as RE2
// expands repetitions: x{n,m} is n copies of x and m-n optional ones. It
// stops counting once the total exceeds limit, so it never overflows.
func EstimateSize(re *syntax.Regexp, limit int) int {
	sub := func(i int) int { return EstimateSize(re.Sub[i], limit) }
	n := 1
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpCapture:
		n = sub(0) + 2
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		n = sub(0) + 1
	case syntax.OpRepeat:
		x := sub(0)
		if re.Max == -1 {
			n = x*max(re.Min, 1) + 1
		} else {
			n = max(x*re.Max+(re.Max-re.Min), 1) // x{0} is an empty match
		}
	case syntax.OpConcat, syntax.OpAlternate:
		n = 0
		if re.Op == syntax.OpAlternate {
			n = len(re.Sub) - 1
		}
		for i := range re.Sub {
			n += sub(i)
			if n > limit {
				break
			}
		}
	}
	return min(n, limit)
}

// threadList is a sparse set of program counters.
type threadList struct {
	sparse []uint32
	dense  []uint32
}

func (l *threadList) reset(n int) {
	if cap(l.sparse) < n {
		l.sparse = make([]uint32, n)
		l.dense = make([]uint32, 0, n)
	}
	l.sparse = l.sparse[:n]
	l.dense = l.dense[:0]
}

func (l *threadList) has(pc uint32) bool {
	i := l.sparse[pc]
	return int(i) < len(l.dense) && l.dense[i] == pc
}

func (l *threadList) add(pc uint32) {
	l.sparse[pc] = uint32(len(l.dense))
	l.dense = append(l.dense, pc)
}

// machine holds the scratch state of one match.
type machine struct {
	cur, next threadList
	stack     []uint32
}

var machines = sync.Pool{New: func() any { return new(machine) }}

// MatchString reports whether s contains a match of p.
func (p *Pattern) MatchString(s string) bool {
	m := machines.Get().(*machine)
	defer machines.Put(m)
	n := len(p.prog.Inst)
	m.cur.reset(n)
	m.next.reset(n)
	prev := rune(-1)
	for pos := 0; ; {
		r, width := rune(-1), 0
		if pos < len(s) {
			r, width = utf8.DecodeRuneInString(s[pos:])
		}
		if pos == 0 || !p.anchorStart {
			m.follow(&p.prog, &m.cur, uint32(p.prog.Start), syntax.EmptyOpContext(prev, r))
		}
		if len(m.cur.dense) == 0 && (p.anchorStart || pos >= len(s)) {
			return false
		}
		var after syntax.EmptyOp
		if pos+width < len(s) || width > 0 {
			next := rune(-1)
			if pos+width < len(s) {
				next, _ = utf8.DecodeRuneInString(s[pos+width:])
			}
			after = syntax.EmptyOpContext(r, next)
		}
		for _, pc := range m.cur.dense {
			inst := &p.prog.Inst[pc]
			switch inst.Op {
			case syntax.InstMatch:
				return true
			case syntax.InstRune, syntax.InstRune1:
				if r >= 0 && inst.MatchRune(r) {
					m.follow(&p.prog, &m.next, inst.Out, after)
				}
			case syntax.InstRuneAny:
				if r >= 0 {
					m.follow(&p.prog, &m.next, inst.Out, after)
				}
			case syntax.InstRuneAnyNotNL:
				if r >= 0 && r != '\n' {
					m.follow(&p.prog, &m.next, inst.Out, after)
				}
			}
		}
		if pos >= len(s) {
			return false
		}
		pos += width
		prev = r
		m.cur, m.next = m.next, m.cur
		m.next.dense = m.next.dense[:0]
	}
}

// follow adds to l the threads reachable from pc without consuming input,
// given the empty-width conditions that hold at the position (ctx).
func (m *machine) follow(prog *syntax.Prog, l *threadList, pc uint32, ctx syntax.EmptyOp) {
	m.stack = append(m.stack[:0], pc)
	for len(m.stack) > 0 {
		pc := m.stack[len(m.stack)-1]
		m.stack = m.stack[:len(m.stack)-1]
		if l.has(pc) {
			continue
		}
		l.add(pc)
		inst := &prog.Inst[pc]
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			m.stack = append(m.stack, inst.Arg, inst.Out)
		case syntax.InstCapture, syntax.InstNop:
			m.stack = append(m.stack, inst.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(inst.Arg)&^ctx == 0 {
				m.stack = append(m.stack, inst.Out)
			}
		}
	}
}
