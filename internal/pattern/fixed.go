package pattern

import (
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// A fixed sequence may use up to fixedSets different character sets in up
// to maxFixed positions.
const (
	fixedSets = 8
	maxFixed  = 256
)

// fixedSeq is the fast path of a pattern that is a fixed sequence of ASCII
// character sets from the start of the text, such as
// ^[0-9a-f]{8}-[0-9a-f]{4}-…$ (a UUID) or ^evt_[A-Za-z0-9]{16}$. Such a
// pattern matches a text exactly when the text's first len(at) bytes are
// each in their set (and, when end is set, there are no more): every set
// holds only ASCII characters, which are one byte each. Unlike a DFA,
// whose every step waits for the one before, the bytes are tested
// independently, so the processor tests several at once; and no states
// are built.
type fixedSeq struct {
	at   []uint8              // per position, its set in sets
	sets [fixedSets][2]uint64 // bitmaps of ASCII bytes
	end  bool                 // the pattern ends with $
}

// fixedOf returns the fast path of p's program, or nil when the program
// is not a start-anchored sequence of ASCII sets, optionally followed by
// an end anchor, with nothing else but no-ops between them.
func fixedOf(p *Pattern) *fixedSeq {
	var sets [fixedSets][2]uint64
	var at [maxFixed]uint8
	end := false
	n, nsets, begin := 0, 0, false
	pc := p.start
	for range len(p.insts) + 1 {
		in := &p.insts[pc]
		switch in.op {
		case opNop:
		case opMatch:
			if !begin {
				return nil
			}
			return &fixedSeq{at: slices.Clone(at[:n]), sets: sets, end: end}
		case opEmpty:
			switch syntax.EmptyOp(in.arg) {
			case syntax.EmptyBeginText:
				if n > 0 || end {
					return nil
				}
				begin = true
			case syntax.EmptyEndText:
				end = true
			default:
				return nil
			}
		case opRune1, opRange, opClass:
			if !begin || end || n == maxFixed {
				return nil
			}
			set, ok := asciiSet(p, in)
			if !ok {
				return nil
			}
			k := 0
			for k < nsets && sets[k] != set {
				k++
			}
			if k == nsets {
				if nsets == fixedSets {
					return nil
				}
				sets[k] = set
				nsets++
			}
			at[n] = uint8(k)
			n++
		default: // alternatives, loops, any character, case folding
			return nil
		}
		pc = in.out
	}
	return nil
}

// asciiSet returns the bitmap of the characters the rune instruction in
// accepts, or false if it accepts a character beyond ASCII.
func asciiSet(p *Pattern, in *inst) (set [2]uint64, ok bool) {
	var rs []rune
	switch in.op {
	case opRune1:
		rs = []rune{rune(in.arg), rune(in.arg)}
	case opRange:
		rs = []rune{rune(in.arg), rune(in.end)}
	case opClass:
		rs = p.runes[in.arg:in.end]
	}
	for j := 0; j+1 < len(rs); j += 2 {
		if rs[j+1] >= utf8.RuneSelf {
			return set, false
		}
		for c := rs[j]; c <= rs[j+1]; c++ {
			set[c>>6] |= 1 << (c & 63)
		}
	}
	return set, true
}

// match reports whether s matches the fixed sequence. It tests every byte
// without a branch, so that the tests of successive bytes overlap.
func (f *fixedSeq) match(s string) bool {
	if len(s) < len(f.at) || f.end && len(s) != len(f.at) {
		return false
	}
	s = s[:len(f.at)]
	var miss uint64
	for i, k := range f.at {
		c := s[i]
		// A byte at or above 0x80 is in no set (every set is ASCII):
		// c>>7 marks it, and c>>6&1 keeps the index in range for it.
		miss |= ^(f.sets[k%fixedSets][c>>6&1]>>(c&63))&1 | uint64(c>>7)
	}
	return miss == 0
}
