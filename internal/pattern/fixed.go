package pattern

import (
	"encoding/binary"
	"math/bits"
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
	n    int                  // the number of positions
	at   []uint8              // per position, its set in sets; nil when words test them
	sets [fixedSets][2]uint64 // bitmaps of ASCII bytes
	end  bool                 // the pattern ends with $
	// When the sequence has at least eight positions and none of its sets
	// has more than maxTerms ranges, the words test eight positions at a
	// time: word w tests positions min(8w, n-8) to that plus 7 (the last
	// may overlap the one before) with terms[w*per:(w+1)*per].
	nwords int
	per    int // the terms of each word: the most ranges of any set
	terms  []rangeTerm
	// termsBuf holds the terms of most sequences (a UUID has 10), so
	// that they cost no allocation of their own; f must not be copied
	// once it has words.
	termsBuf [16]rangeTerm
}

// rangeTerm tests eight ASCII bytes at once, each against one range lo..hi
// of its position's set (a range of its own per byte): adding 0x80-lo to
// a byte sets its high bit when the byte is at least lo, and adding
// 0x80-hi-1 when it is above hi (an ASCII byte plus at most 0x80 never
// carries into the next byte). addLo and addAbove hold those addends, a
// byte each. A position the term does not test has 0 in both: an ASCII
// byte plus 0 keeps its high bit clear, so the term says nothing of it.
// Only the high bit of each byte of a term's result means anything; the
// word masks them once, after all its terms.
//
// Term j of a word tests each position against the j-th range of its set,
// so a word needs as many terms as its sets have ranges at most, however
// many different sets it holds: ^evt_[A-Za-z0-9]{16}$ tests its first
// eight bytes with three terms.
type rangeTerm struct{ addLo, addAbove uint64 }

// Masks of eight bytes: the low bit of each, the high bit of each.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// maxTerms bounds the range tests of one word; past it a word costs
// more than testing its bytes one by one.
const maxTerms = 12

// init makes f, which must be zero, the fixed sequence of the sets at
// (indexes into the first nsets of sets), with word tests when they pay.
// It allocates a copy of at when they do not, and the terms when they are
// too many for f's own array.
func (f *fixedSeq) init(at []uint8, sets [fixedSets][2]uint64, nsets int, end bool) {
	f.n, f.sets, f.end = len(at), sets, end
	if f.setWords(at, nsets) {
		return
	}
	f.at = slices.Clone(at)
}

// setWords sets up f's word tests for the positions at and reports whether
// they pay. Every word gets the same number of terms, so that the loop
// over a word's terms runs the same number of times for each word of a
// text, and the processor predicts where it ends.
//
// It runs on every compile, so it builds each word from addends worked
// out once per set, and spares the lane-by-lane work where sequences
// repeat: a word of one set throughout (eight of [0-9a-f]{12}) is each
// addend broadcast to every byte, and a word whose positions have the
// same sets as the word before (the overlapping last word of
// [A-Za-z0-9]{16}) copies its terms.
func (f *fixedSeq) setWords(at []uint8, nsets int) bool {
	n := len(at)
	if n < 8 {
		return false
	}
	// The addends of each set's ranges, found once: lo[j][k] and
	// above[j][k] for its j-th range, j < count[k], and 0 past them. A
	// set of more than maxTerms ranges is too many for a word.
	var lo, above [maxTerms][fixedSets]uint8
	var count [fixedSets]int
	per := 0
	for k := range nsets {
		var buf [maxTerms + 1][2]uint8
		runs := appendRuns(buf[:0], f.sets[k])
		if len(runs) > maxTerms {
			return false
		}
		for j, r := range runs {
			lo[j][k], above[j][k] = 0x80-r[0], 0x7f-r[1]
		}
		count[k] = len(runs)
		per = max(per, len(runs)) // every set of sets[:nsets] is used
	}
	nwords := (n + 7) / 8
	if total := nwords * per; total > len(f.termsBuf) {
		f.terms = make([]rangeTerm, total)
	} else {
		f.terms = f.termsBuf[:total] // zero: f is
	}
	var prev uint64 // the sets of the word before, a byte each
	for w := range nwords {
		off := min(8*w, n-8)
		ts := f.terms[w*per : (w+1)*per]
		key := binary.LittleEndian.Uint64(at[off:])
		switch k := at[off] % fixedSets; {
		case w > 0 && key == prev:
			copy(ts, f.terms[(w-1)*per:w*per])
		case key == uint64(k)*ones: // one set in every lane
			for j := range count[k] {
				ts[j] = rangeTerm{uint64(lo[j][k]) * ones, uint64(above[j][k]) * ones}
			}
		default:
			// Term j tests each lane against the j-th range of its set;
			// a set with fewer ranges leaves its lane untested (its
			// addends there are 0).
			for j := range ts {
				var t rangeTerm
				los, aboves := &lo[j], &above[j]
				for lane, k := range at[off : off+8] {
					t.addLo |= uint64(los[k%fixedSets]) << (8 * lane)
					t.addAbove |= uint64(aboves[k%fixedSets]) << (8 * lane)
				}
				ts[j] = t
			}
		}
		prev = key
	}
	f.nwords, f.per = nwords, per
	return true
}

// appendRuns appends the runs of consecutive bytes of the ASCII bitmap
// set to dst, as first and last byte, stopping once dst is full.
func appendRuns(dst [][2]uint8, set [2]uint64) [][2]uint8 {
	for c := 0; c < 128 && len(dst) < cap(dst); {
		w := set[c>>6] >> (c & 63)
		if w == 0 {
			c = c | 63 + 1 // the rest of this half is empty
			continue
		}
		c += bits.TrailingZeros64(w)
		end := c + bits.TrailingZeros64(^(set[c>>6] >> (c & 63)))
		if end == 64 { // the run may go on into the upper half
			end += bits.TrailingZeros64(^set[1])
		}
		dst = append(dst, [2]uint8{uint8(c), uint8(end - 1)})
		c = end
	}
	return dst
}

// minPrefix is the shortest fixed prefix worth matching apart from the
// rest of its pattern.
const minPrefix = 4

// fixedOf returns the fast path of p's program: whole when the program is
// a start-anchored sequence of ASCII sets, optionally followed by an end
// anchor, with nothing else but no-ops between them; otherwise prefix
// when the program starts with such a sequence of at least minPrefix sets
// and nothing in the program that carries on from it tests an empty-width
// condition but the end of the text. Such a pattern, say
// ^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$, matches a text exactly when
// the sequence matches its first bytes and the rest of the program,
// anchored there, matches the remaining ones: the sets are ASCII, one
// byte each, and the rest of the program cannot see what came before.
// It reports which applies, noFixed when neither does, and leaves the
// sequence in fs, for newPattern to build with the Pattern.
func fixedOf(p *Pattern, fs *fixedScan) fixedKind {
	sets, at := &fs.sets, &fs.at
	end := false
	n, nsets, begin := 0, 0, false
	var last inst // the instruction of the last set
	pc := p.start
	split := func() fixedKind {
		if !begin || end || n < minPrefix || !onlyEndText(p, pc) {
			return noFixed
		}
		fs.n, fs.nsets, fs.rest = n, nsets, pc
		return fixedPrefix
	}
	for range len(p.insts) + 1 {
		in := &p.insts[pc]
		switch in.op {
		case opNop:
		case opMatch:
			if !begin {
				return noFixed
			}
			fs.n, fs.nsets, fs.end = n, nsets, end
			return fixedWhole
		case opEmpty:
			switch syntax.EmptyOp(in.arg) {
			case syntax.EmptyBeginText:
				if n > 0 || end {
					return noFixed
				}
				begin = true
			case syntax.EmptyEndText:
				end = true
			default:
				return split()
			}
		case opRune1, opRange, opClass:
			if !begin || end || n == maxFixed {
				return split()
			}
			var k uint8
			if n > 0 && in.op == last.op && in.arg == last.arg && in.end == last.end {
				k = at[n-1] // a repeated set
			} else {
				last = *in
				set, ok := asciiSet(p, in)
				if !ok {
					return split()
				}
				for int(k) < nsets && sets[k%fixedSets] != set {
					k++
				}
				if int(k) == nsets {
					if nsets == fixedSets {
						return split()
					}
					sets[k%fixedSets] = set
					nsets++
				}
			}
			at[n] = k
			n++
			// The copies of a counted repetition ([0-9a-f]{8}) follow
			// in a row: take them here, up to the most positions.
			for n < maxFixed {
				next := &p.insts[in.out]
				if next.op != in.op || next.arg != in.arg || next.end != in.end {
					break
				}
				at[n] = k
				n++
				in = next
			}
		default: // alternatives, loops, any character, case folding
			return split()
		}
		pc = in.out
	}
	return noFixed
}

// fixedKind says which fast path fixedOf found.
type fixedKind uint8

const (
	noFixed     fixedKind = iota
	fixedWhole            // the program is a fixed sequence
	fixedPrefix           // the program starts with one
)

// fixedScan is the fixed sequence fixedOf found: its first n positions'
// sets, indexes into the first nsets of sets; whether it ends with $ (a
// whole sequence); and where the rest of the program starts (a prefix).
type fixedScan struct {
	at       [maxFixed]uint8
	sets     [fixedSets][2]uint64
	n, nsets int
	end      bool
	rest     uint32
}

// prefixed is the fast path of a pattern that starts with a fixed
// sequence: the sequence, and the pattern that goes on from it, in one
// allocation.
type prefixed struct {
	seq  fixedSeq
	rest Pattern
}

// onlyEndText reports whether no instruction reachable from pc tests an
// empty-width condition other than the end of the text.
func onlyEndText(p *Pattern, pc uint32) bool {
	var seenBuf [512]bool
	var stackBuf [64]uint32
	var seen []bool
	if len(p.insts) <= len(seenBuf) {
		seen = seenBuf[:len(p.insts)]
	} else {
		seen = make([]bool, len(p.insts))
	}
	stack := append(stackBuf[:0], pc)
	for len(stack) > 0 {
		pc, stack = stack[len(stack)-1], stack[:len(stack)-1]
		if seen[pc] {
			continue
		}
		seen[pc] = true
		in := &p.insts[pc]
		switch in.op {
		case opFail, opMatch:
			continue
		case opEmpty:
			if syntax.EmptyOp(in.arg) != syntax.EmptyEndText {
				return false
			}
		case opAlt:
			stack = append(stack, in.arg)
		}
		stack = append(stack, in.out)
	}
	return true
}

// asciiSet returns the bitmap of the characters the rune instruction in
// accepts, or false if it accepts a character beyond ASCII.
func asciiSet(p *Pattern, in *inst) (set [2]uint64, ok bool) {
	switch in.op {
	case opRune1:
		c := in.arg
		if c >= utf8.RuneSelf {
			return set, false
		}
		set[c>>6&1] = 1 << (c & 63)
		return set, true
	case opRange:
		if in.end >= utf8.RuneSelf {
			return set, false
		}
		return asciiRange(in.arg, in.end), true
	}
	rs := p.runes[in.arg:in.end] // opClass
	for j := 0; j+1 < len(rs); j += 2 {
		if rs[j+1] >= utf8.RuneSelf {
			return set, false
		}
		r := asciiRange(uint32(rs[j]), uint32(rs[j+1]))
		set[0], set[1] = set[0]|r[0], set[1]|r[1]
	}
	return set, true
}

// asciiRange returns the bitmap of the bytes lo..hi, which are ASCII.
func asciiRange(lo, hi uint32) [2]uint64 {
	a, b := below(lo), below(hi+1)
	return [2]uint64{b[0] &^ a[0], b[1] &^ a[1]}
}

// below returns the bitmap of the bytes below x, at most 128 (a shift
// by 64 or more gives 0).
func below(x uint32) [2]uint64 {
	m := [2]uint64{1<<x - 1, 0}
	if x >= 64 {
		m[1] = 1<<(x-64) - 1
	}
	return m
}

// fits reports whether s is long enough for the sequence, and not longer
// when the sequence ends the pattern.
func (f *fixedSeq) fits(s string) bool {
	return len(s) == f.n || len(s) > f.n && !f.end
}

// matchBytes is match for a sequence without word tests: it tests the
// bytes one by one.
func (f *fixedSeq) matchBytes(s string) bool {
	if !f.fits(s) {
		return false
	}
	s = s[:f.n]
	var miss uint64
	for i, k := range f.at {
		c := s[i]
		// A byte at or above 0x80 is in no set (every set is ASCII):
		// c>>7 marks it, and c>>6&1 keeps the index in range for it.
		miss |= ^(f.sets[k%fixedSets][c>>6&1]>>(c&63))&1 | uint64(c>>7)
	}
	return miss == 0
}

// match reports whether s matches the fixed sequence. Neither way of
// testing it branches on a byte, so that the tests of successive bytes
// overlap: a sequence of at least eight positions tests them eight at a
// time, with its words, and a shorter one byte by byte (matchBytes). No
// word stops the others early, so that their tests overlap too.
//
// Words of one, two and three terms (sets of digits; hex digits of one
// case; letters and digits, or hex digits of both cases) have loops of
// their own that name each term: a loop over a word's terms costs more
// instructions than the tests it runs (its slicing, bounds checks and
// counters, and the registers they take from the tests), while these
// check the length of the terms left once per word and each term not at
// all. On a batch of UUIDs, ids and timestamps the words take half
// the instructions they took with the general loop alone.
func (f *fixedSeq) match(s string) bool {
	if f.nwords == 0 {
		return f.matchBytes(s)
	}
	if !f.fits(s) {
		return false
	}
	s = s[:f.n]
	// The high bit of each byte of out is set when some byte tested
	// there is out of its set or is not ASCII (a byte that is not ASCII
	// is in no set; its own high bit says so). Its other bits are noise.
	var out uint64
	// Every word but the last starts eight bytes after the one before,
	// taken off the front of s; the last is the text's last eight bytes.
	tail := load64(s[len(s)-8:]) // len(s) is f.n, at least 8
	switch f.per {
	case 1:
		ts := f.terms[:f.nwords]
		for len(ts) > 2 { // two words at a time while two and the last are left
			x, y := load64(s), load64(s[8:])
			out |= ^ts[0].in(x) | x | ^ts[1].in(y) | y
			s, ts = s[16:], ts[2:]
		}
		for len(ts) > 1 {
			x := load64(s)
			out |= ^ts[0].in(x) | x
			s, ts = s[8:], ts[1:]
		}
		out |= ^ts[0].in(tail) | tail
	case 2:
		// Taking the terms off the front of ts leaves the compiler a
		// length it can check the indexes against, once per word.
		ts := f.terms[:2*f.nwords]
		for len(ts) > 4 { // two words at a time while two and the last are left
			x, y := load64(s), load64(s[8:])
			out |= ^(ts[0].in(x) | ts[1].in(x)) | x | ^(ts[2].in(y) | ts[3].in(y)) | y
			s, ts = s[16:], ts[4:]
		}
		for len(ts) > 2 {
			x := load64(s)
			out |= ^(ts[0].in(x) | ts[1].in(x)) | x
			s, ts = s[8:], ts[2:]
		}
		out |= ^(ts[0].in(tail) | ts[1].in(tail)) | tail
	case 3:
		ts := f.terms[:3*f.nwords]
		for len(ts) > 6 { // two words at a time while two and the last are left
			x, y := load64(s), load64(s[8:])
			out |= ^(ts[0].in(x) | ts[1].in(x) | ts[2].in(x)) | x | ^(ts[3].in(y) | ts[4].in(y) | ts[5].in(y)) | y
			s, ts = s[16:], ts[6:]
		}
		for len(ts) > 3 {
			x := load64(s)
			out |= ^(ts[0].in(x) | ts[1].in(x) | ts[2].in(x)) | x
			s, ts = s[8:], ts[3:]
		}
		out |= ^(ts[0].in(tail) | ts[1].in(tail) | ts[2].in(tail)) | tail
	default:
		per, last := f.per, len(s)-8
		for w := range f.nwords {
			x := load64(s[min(8*w, last):])
			var in uint64
			for _, t := range f.terms[w*per:][:per] {
				in |= t.in(x)
			}
			out |= ^in | x
		}
	}
	return out&highs == 0
}

// in returns the eight bytes x with the high bit of each set when the byte
// is in the range t tests there (and clear where t tests nothing).
func (t *rangeTerm) in(x uint64) uint64 {
	return (x + t.addLo) &^ (x + t.addAbove)
}

// load64 returns the first eight bytes of s as a little-endian word, in
// one load: the compiler merges the byte loads.
func load64(s string) uint64 {
	_ = s[7] // one bounds check for the eight
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
