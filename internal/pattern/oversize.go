package pattern

import "regexp/syntax"

// termAt is where a term of the pattern (an atom with its quantifier, if
// any) was written: the parser records one per term when asked, so that a
// pattern over the size limit can name the piece that took it over.
type termAt struct {
	re       *syntax.Regexp
	from, to int
}

// overSizeError is the error for the pattern src, which parsed with
// rangeRoom, when its program would take more than limit instructions. It
// parses src again, noting where each term was written this time, and
// returns overSize's error.
func overSizeError(src string, rangeRoom, limit int) *Error {
	p := parsers.Get().(*parser)
	p.src, p.pos, p.rangeRoom, p.recordTerms = src, 0, rangeRoom, true
	defer p.release()
	tree, err := p.parse()
	if err != nil { // not so: the same parse succeeded before
		tree = nil // the error names the whole pattern
	}
	return p.overSize(tree, limit)
}

// overSize is the error for a pattern whose program would take more than
// limit instructions: it names the innermost term, as written, at which
// the program's estimated size first goes past limit, reading the
// pattern from the left. That is the repetition whose count multiplied a
// piece past the limit (x{99999}, or the outer (x{100}){100}), or the
// term after which what came before no longer leaves room.
func (p *parser) overSize(tree *syntax.Regexp, limit int) *Error {
	// A group's term has the same node as the one term inside it, and is
	// recorded after it: the innermost text is kept.
	spans := make(map[*syntax.Regexp]termAt, len(p.terms))
	for _, t := range p.terms {
		if _, ok := spans[t.re]; !ok {
			spans[t.re] = t
		}
	}
	at := termAt{from: 0, to: len(p.src)} // the whole pattern, when no term is to blame
	for re, room := tree, limit; re != nil; {
		if t, ok := spans[re]; ok {
			at = t
		}
		re, room = overSub(re, room)
	}
	e := p.errAt(at.from, at.to, "the program grows past the limit on instructions here")
	e.OverSize = true
	return e
}

// overSub returns the part of re, and the room left for it, whose size
// goes past room when re's does; nil when re itself is to blame (a
// repetition of a piece that fits, or a leaf).
func overSub(re *syntax.Regexp, room int) (*syntax.Regexp, int) {
	size := func(r *syntax.Regexp) int { return EstimateSize(r, max(room, 0)+1) }
	switch re.Op {
	case syntax.OpConcat, syntax.OpAlternate:
		used := 0
		if re.Op == syntax.OpAlternate {
			used = len(re.Sub) - 1
		}
		for _, sub := range re.Sub {
			n := size(sub)
			if used+n > room {
				return sub, room - used
			}
			used += n
		}
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		// A repetition is to blame unless one copy of its piece, with
		// the least the repetition adds to it, is too big by itself:
		// x{n} adds nothing to its n copies, any other form a split
		// instruction, and x{0} compiles no copy at all.
		extra := 1
		if re.Op == syntax.OpRepeat && re.Min == re.Max {
			if re.Max == 0 {
				return nil, 0
			}
			extra = 0
		}
		if size(re.Sub[0]) > room-extra {
			return re.Sub[0], room - extra
		}
	}
	return nil, 0
}
