package pattern

import (
	"math"
	"math/bits"
	"regexp/syntax"
	"slices"
	"sort"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// The lazy DFA. A state is the set of program counters the NFA can be at
// just after consuming a character (its kernel), plus two flags: the text
// is at its beginning, and the last character was an ASCII word character
// (kept only when the program tests \b or \B). Empty-width conditions are
// resolved on the transition, once the next character is known, as RE2
// does: the transition on c follows the kernel's empty moves under the
// conditions between the previous character and c, then steps over c.
//
// States are built on demand and cached in the State a search is given
// (one per pattern per validation; see State). ASCII bytes index a
// table of transitions through byte classes; other characters go through
// a map keyed by the state and their rune class. The cache is bounded:
// when it fills up it is cleared and the search goes on from the state it
// is in, so a pattern whose states thrash costs one NFA step per character
// (the Pike VM's bound) and never more memory.
//
// A search answers only whether the text contains a match, so it stops at
// the first state whose closure reaches the match instruction; unanchored
// patterns add the start to every state's closure.

// Special transition targets; states proper are numbered from firstState.
const (
	unknownState int32 = iota // not computed yet
	matchState                // the text contains a match
	deadState                 // no match can start or go on
	outOfBudget               // the search spent its budget
	firstState
)

// Cache bounds of one DFA (one State's): states, and kernel entries
// across them. Variables so that tests can make the cache thrash.
var (
	maxDFAStates  = 4096
	maxDFAKernels = 1 << 18
)

const (
	flagBegin = 1 << iota // at the beginning of the text
	flagWord              // the last character was an ASCII word character
)

type dstate struct {
	kstart, kend uint32 // the kernel, d.kernels[kstart:kend]
	hash         uint64 // of the kernel and flags
	flags        uint8
	// threads, for pikeSearch, is the work the Pike VM counts at a
	// position in this state, plus one (0: not known): before a character
	// that is not a word character, one that is, and at the end of the
	// text. It fills the padding after flags.
	threads [3]uint16
}

// dfa is a pattern's lazily built DFA, held by a State.
type dfa struct {
	p       *Pattern
	classes [256]uint8 // the class of each byte; every non-ASCII byte is class nonASCII
	// A state's row in trans has a column per ASCII class, one for the
	// bytes that start a non-ASCII character (always unknown: they take
	// the rune path), one for the end of the text (matchState or
	// deadState once known) and one that says whether the state has an
	// acceleration table (k > 0: accels[k-1]; 0 or less: none yet, minus
	// the bytes it stayed on).
	nonASCII int
	stride   int
	bounds   []rune // where non-ASCII rune classes change, sorted
	useWord  bool   // the program tests \b or \B

	trans   []int32     // state*stride + class → next state*stride (ids premultiplied)
	accels  [][256]bool // per accelerated state: the bytes on which it stays where it is
	other   map[uint64]int32
	states  []dstate
	kernels []uint32
	index   []int32 // open-addressing hash of the states by kernel and flags: a state number, or 0 for none
	start   int32   // the state at the beginning of the text, or unknownState

	*dfaScratch // held only during a search that builds states

	// The first states of the cache and the rune bounds live here, so that
	// a pattern's DFA is one allocation until it grows past what a typical
	// pattern needs (a UUID pattern builds about 40 states).
	index0   [64]int32
	states0  [24]dstate
	trans0   [320]int32
	kernels0 [128]uint32
	bounds0  [16]rune

	nextFlags uint8 // the flags of the kernel in next

	// work counts the units a search spent: a byte scanned is one, and
	// so is each NFA instruction visited while building a state. It
	// stops at budget.
	work, budget int
	clears       int // cache clears during this search
}

// bytes estimates the memory d holds: the struct with its own arrays,
// and whatever its tables grew into beyond them.
func (d *dfa) bytes() int {
	n := int(unsafe.Sizeof(*d)) + len(d.accels)*256 + len(d.other)*48
	if cap(d.trans) > len(d.trans0) {
		n += cap(d.trans) * 4
	}
	if cap(d.states) > len(d.states0) {
		n += cap(d.states) * int(unsafe.Sizeof(dstate{}))
	}
	if cap(d.kernels) > len(d.kernels0) {
		n += cap(d.kernels) * 4
	}
	if cap(d.index) > len(d.index0) {
		n += cap(d.index) * 4
	}
	if cap(d.bounds) > len(d.bounds0) {
		n += cap(d.bounds) * 4
	}
	return n
}

// dfaScratch is the working memory of building states, pooled across
// patterns: most searches build none.
type dfaScratch struct {
	closure, next sparseSet
	stack         []uint32
}

var scratches = sync.Pool{New: func() any { return new(dfaScratch) }}

// acquire gives d scratch space for a program of n instructions.
func (d *dfa) acquire() {
	if d.dfaScratch != nil {
		return
	}
	d.dfaScratch = scratches.Get().(*dfaScratch)
	n := len(d.p.insts)
	if len(d.closure.sparse) < n {
		d.closure.init(n)
		d.next.init(n)
	}
}

// release returns the scratch space, unless a large program grew it.
func (d *dfa) release() {
	if d.dfaScratch == nil {
		return
	}
	if len(d.closure.sparse) <= 1<<12 {
		scratches.Put(d.dfaScratch)
	}
	d.dfaScratch = nil
}

// sparseSet is a set of program counters in insertion order.
type sparseSet struct {
	sparse []uint32
	dense  []uint32
}

func (s *sparseSet) init(n int) {
	s.sparse = make([]uint32, n)
	s.dense = make([]uint32, 0, n)
}

func (s *sparseSet) has(pc uint32) bool {
	i := s.sparse[pc]
	return int(i) < len(s.dense) && s.dense[i] == pc
}

func (s *sparseSet) add(pc uint32) {
	s.sparse[pc] = uint32(len(s.dense))
	s.dense = append(s.dense, pc)
}

// newDFA prepares the byte and rune classes of p's program.
func newDFA(p *Pattern) *dfa {
	d := new(dfa)
	d.init(p)
	return d
}

// init prepares d for p: the byte and rune classes of its program and an
// empty cache, whose first states fit in d's own arrays.
func (d *dfa) init(p *Pattern) {
	d.p = p
	var ascii [129]bool // a class starts at this byte
	var buf [128]rune
	bounds := buf[:0]
	var seenBuf [16]uint32
	seen := seenBuf[:0] // the classes marked
	mark := func(lo, hi rune) {
		for _, b := range [2]rune{lo, hi + 1} {
			if b < 128 {
				ascii[b] = true
			} else if b <= utf8.MaxRune {
				bounds = append(bounds, b)
			}
		}
	}
	for i := range p.insts {
		in := &p.insts[i]
		switch in.op {
		case opRune1:
			mark(rune(in.arg), rune(in.arg))
		case opRange:
			mark(rune(in.arg), rune(in.end))
		case opClass:
			if slices.Contains(seen, in.arg) {
				continue // a copy of a class already marked: copies share ranges
			}
			seen = append(seen, in.arg)
			rs := p.runes[in.arg:in.end]
			for j := 0; j+1 < len(rs); j += 2 {
				mark(rs[j], rs[j+1])
			}
		case opAnyNotNL:
			mark('\n', '\n')
		case opEmpty:
			if syntax.EmptyOp(in.arg)&(syntax.EmptyWordBoundary|syntax.EmptyNoWordBoundary) != 0 {
				d.useWord = true
			}
		}
	}
	if d.useWord {
		for i := 0; i < len(wordRanges); i += 2 {
			mark(wordRanges[i], wordRanges[i+1])
		}
	}
	c := 0
	for b := range 128 {
		if b > 0 && ascii[b] {
			c++
		}
		d.classes[b] = uint8(c)
	}
	d.nonASCII = c + 1
	for b := 128; b < 256; b++ {
		d.classes[b] = uint8(d.nonASCII)
	}
	d.stride = d.nonASCII + 3
	bounds = sortBounds(bounds)
	if len(bounds) > 0 {
		d.bounds = append(d.bounds0[:0:len(d.bounds0)], bounds...)
	}
	d.reset()
}

// reset empties the cache, keeping its buffers.
func (d *dfa) reset() {
	if d.index == nil {
		// Room for the states of a typical pattern, in one allocation each.
		// Room for the states of a typical pattern in d's own arrays.
		d.index = d.index0[:]
		d.states = d.states0[:0]
		d.trans = d.trans0[:0]
		d.kernels = d.kernels0[:0]
	} else {
		clear(d.index)
	}
	d.other = nil // made when a non-ASCII character first comes
	d.states = append(d.states[:0], make([]dstate, firstState)...)
	d.trans = append(d.trans[:0], make([]int32, firstState*int32(d.stride))...)
	d.kernels = d.kernels[:0]
	d.accels = d.accels[:0]
	d.start = unknownState
}

// intern returns the state of the kernel in d.next.dense with flags,
// adding it when new. It clears the cache first when it is full; the
// caller's state numbers are then stale (cleared reports it).
func (d *dfa) intern(flags uint8) (id int32, cleared bool) {
	k := d.next.dense
	slices.Sort(k)
	h := uint64(flags) + 1
	for _, pc := range k {
		h = (h ^ uint64(pc)) * 0x100000001b3
	}
	mask := uint64(len(d.index) - 1)
	i := h & mask
	for ; d.index[i] != 0; i = (i + 1) & mask {
		st := &d.states[d.index[i]]
		if st.flags == flags && slices.Equal(d.kernels[st.kstart:st.kend], k) {
			return d.index[i], false
		}
	}
	if len(d.states) >= maxDFAStates || len(d.kernels)+len(k) > maxDFAKernels {
		d.reset()
		cleared = true
	}
	id = int32(len(d.states))
	start := uint32(len(d.kernels))
	d.kernels = append(d.kernels, k...)
	d.states = append(d.states, dstate{kstart: start, kend: uint32(len(d.kernels)), flags: flags, hash: h})
	d.trans = append(d.trans, make([]int32, d.stride)...)
	if 2*(len(d.states)-int(firstState)) > len(d.index) {
		d.index = make([]int32, 2*len(d.index))
		for id := firstState; int(id) < len(d.states); id++ {
			d.place(id)
		}
	} else {
		d.place(id)
	}
	return id, cleared
}

// place puts state id in the hash index.
func (d *dfa) place(id int32) {
	mask := uint64(len(d.index) - 1)
	i := d.states[id].hash & mask
	for d.index[i] != 0 {
		i = (i + 1) & mask
	}
	d.index[i] = id
}

// startState returns the state at the beginning of the text.
func (d *dfa) startState() int32 {
	if d.start == unknownState {
		d.acquire()
		d.next.dense = d.next.dense[:0]
		d.start, _ = d.intern(flagBegin)
	}
	return d.start
}

// step computes the transition of state id on r (-1: the end of the
// text) without caching it. A state it reaches is returned premultiplied
// by the stride, as the transition table holds it.
func (d *dfa) step(id int32, r rune) (next int32, cleared bool) {
	d.acquire()
	st := d.states[id]
	if res := d.advance(d.kernels[st.kstart:st.kend], st.flags, r); res != unknownState {
		return res, false
	}
	id, cleared = d.intern(d.nextFlags)
	return id * int32(d.stride), cleared
}

// advance runs the NFA one character r (-1: the end of the text) from
// kernel with flags. It returns matchState, deadState or outOfBudget, or
// unknownState with the new kernel in d.next and its flags in d.nextFlags.
func (d *dfa) advance(kernel []uint32, flags uint8, r rune) int32 {
	var ctx syntax.EmptyOp
	if flags&flagBegin != 0 {
		ctx |= syntax.EmptyBeginText | syntax.EmptyBeginLine
	}
	if r < 0 {
		ctx |= syntax.EmptyEndText | syntax.EmptyEndLine
	}
	if (flags&flagWord != 0) != (r >= 0 && syntax.IsWordChar(r)) {
		ctx |= syntax.EmptyWordBoundary
	} else {
		ctx |= syntax.EmptyNoWordBoundary
	}
	p := d.p
	d.closure.dense = d.closure.dense[:0]
	for _, pc := range kernel {
		d.follow(pc, ctx)
	}
	if !p.anchorStart || flags&flagBegin != 0 {
		d.follow(p.start, ctx)
	}
	d.work += len(d.closure.dense) + len(kernel)
	if d.work > d.budget {
		return outOfBudget
	}
	if r < 0 {
		for _, pc := range d.closure.dense {
			if p.insts[pc].op == opMatch {
				return matchState
			}
		}
		return deadState
	}
	d.next.dense = d.next.dense[:0]
	lastClass, lastOK := ^uint32(0), false // copies of a class share its ranges: test them once
	for _, pc := range d.closure.dense {
		in := &p.insts[pc]
		var ok bool
		switch in.op {
		case opMatch:
			return matchState
		case opClass:
			if in.arg != lastClass {
				lastClass, lastOK = in.arg, inClass(p.runes[in.arg:in.end], r)
			}
			ok = lastOK
		default:
			ok = p.accepts(in, r)
		}
		if ok && !d.next.has(in.out) {
			d.next.add(in.out)
		}
	}
	if len(d.next.dense) == 0 && p.anchorStart {
		return deadState
	}
	d.nextFlags = 0
	if d.useWord && syntax.IsWordChar(r) {
		d.nextFlags = flagWord
	}
	return unknownState
}

// thrash finishes a search whose cache keeps filling up: it runs the NFA
// from the state at row cur over s without building states, which costs
// the same steps and none of the interning.
func (d *dfa) thrash(cur int32, s string) int32 {
	st := d.states[cur/int32(d.stride)]
	kernel := append([]uint32(nil), d.kernels[st.kstart:st.kend]...)
	flags := st.flags
	for i := 0; ; {
		r, n := rune(-1), 0
		if i < len(s) {
			r, n = utf8.DecodeRuneInString(s[i:])
			if r >= 0x10000 && d.p.midEmpty {
				return matchState
			}
		}
		if res := d.advance(kernel, flags, r); res != unknownState {
			return res
		}
		kernel, flags = append(kernel[:0], d.next.dense...), d.nextFlags
		i += n
	}
}

// follow adds to d.closure the instructions reachable from pc without
// consuming input under the conditions ctx.
func (d *dfa) follow(pc uint32, ctx syntax.EmptyOp) {
	insts := d.p.insts
	if op := insts[pc].op; op >= opRune1 || op == opMatch || op == opFail {
		if !d.closure.has(pc) { // most kernel entries: no empty moves to follow
			d.closure.add(pc)
		}
		return
	}
	d.stack = append(d.stack[:0], pc)
	for len(d.stack) > 0 {
		pc := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		if d.closure.has(pc) {
			continue
		}
		d.closure.add(pc)
		in := &insts[pc]
		switch in.op {
		case opAlt:
			d.stack = append(d.stack, in.arg, in.out)
		case opNop:
			d.stack = append(d.stack, in.out)
		case opEmpty:
			if syntax.EmptyOp(in.arg)&^ctx == 0 {
				d.stack = append(d.stack, in.out)
			}
		}
	}
}

// runeClass returns the class of a non-ASCII rune.
func (d *dfa) runeClass(r rune) uint64 {
	return uint64(sort.Search(len(d.bounds), func(i int) bool { return d.bounds[i] > r }))
}

// maxClears is how many times one search may clear a full cache before it
// stops building states (see thrash).
const maxClears = 2

// match reports whether s contains a match, spending at most budget units
// of work; ok is false when it ran out first. It is small enough to be
// inlined into MatchBudget, so that a match on a DFA that holds the
// states it needs costs one call.
func (d *dfa) match(s string, budget int) (matched bool, work int, ok bool) {
	res := d.run(s, budget)
	return res == matchState, d.work, res != outOfBudget
}

// shortText is the longest text run tries on known transitions alone: a
// longer one may stay in a state long enough for search's acceleration
// table to pay.
const shortText = 64

// run is search, tried first, for a short text, on the transitions the
// DFA knows: most texts a State sees after its first few take only
// those, and then it costs a small loop and none of search's setting up.
// It hands the text over to search where the transition it needs is not
// known yet, at the first byte of a character beyond ASCII (whose column
// is never known) or at the end, and search goes on from there: the
// transitions run took are the ones search would have taken, and cost the
// one unit per byte search charges up front. It leaves the text to search
// from the start when search would empty the cache first, which it then
// refills, counting the work.
func (d *dfa) run(s string, budget int) int32 {
	if len(s) > shortText || len(s) > budget || d.start == unknownState ||
		2*len(d.states) > maxDFAStates || 2*len(d.kernels) > maxDFAKernels {
		return d.search(s, budget, 0, unknownState)
	}
	stride := int32(d.stride)
	first := int32(firstState) * stride
	cur := d.start * stride
	trans := d.trans
	for i := 0; i < len(s); i++ {
		next := trans[int(cur)+int(d.classes[s[i]])]
		if next < first {
			return d.search(s, budget, i, cur)
		}
		cur = next
	}
	end := trans[int(cur)+int(stride)-2]
	if end == unknownState {
		return d.search(s, budget, len(s), cur)
	}
	d.work = len(s)
	return end
}

// search runs the DFA over s, spending at most budget units of work, and
// returns matchState, deadState or outOfBudget. It starts at byte from in
// the state at row cur, which run has reached on known transitions, or at
// the start when cur is unknownState.
func (d *dfa) search(s string, budget int, from int, cur int32) int32 {
	d.work, d.budget, d.clears = len(s), budget, 0
	if d.work > d.budget {
		return outOfBudget
	}
	if len(d.states) > maxDFAStates/2 || len(d.kernels) > maxDFAKernels/2 {
		// A search starts with at least half the cache free. Left nearly
		// full by an earlier search, the cache would be cleared twice while
		// this one builds its first states, and the search would then
		// finish in thrash mode at the NFA's speed, where a fresh cache
		// soon holds every state the text needs.
		d.reset()
	}
	stride := d.stride
	meta := stride - 1
	first := int32(firstState) * int32(stride)
	if cur == unknownState {
		from, cur = 0, d.startState()*int32(stride) // states are premultiplied here
	}
	trans, classes := d.trans, &d.classes
	for i := from; i < len(s); {
		next := trans[int(cur)+int(classes[s[i]])]
		if next >= first {
			if next == cur {
				// A self-loop: skip the run of bytes the state stays on.
				k := trans[int(cur)+meta]
				if k <= 0 {
					if k > -accelAfter { // not worth a table yet
						d.trans[int(cur)+meta]--
						i++
						continue
					}
					k = d.accelerate(cur)
				}
				acc := &d.accels[k-1]
				i++
				for i < len(s) && acc[s[i]] {
					i++
				}
				continue
			}
			cur = next
			i++
			continue
		}
		var n int
		if b := s[i]; b < utf8.RuneSelf {
			var cleared bool
			next, cleared = d.step(cur/int32(stride), rune(b))
			if !cleared && next >= first {
				d.trans[int(cur)+int(classes[b])] = next
				d.trans[int(cur)+meta] = 0 // its acceleration table is stale
			}
			if cleared {
				d.clears++
			}
			n = 1
		} else {
			var r rune
			r, n = utf8.DecodeRuneInString(s[i:])
			if r >= 0x10000 && d.p.midEmpty {
				return d.done(matchState)
			}
			key := uint64(cur)<<32 | d.runeClass(r)
			var ok bool
			if d.other == nil {
				d.other = make(map[uint64]int32)
			}
			if next, ok = d.other[key]; !ok {
				var cleared bool
				next, cleared = d.step(cur/int32(stride), r)
				if !cleared {
					d.other[key] = next
				}
				if cleared {
					d.clears++
				}
			}
		}
		if next < first {
			return d.done(next) // matchState, deadState or outOfBudget
		}
		if d.clears >= maxClears {
			return d.done(d.thrash(next, s[i+n:]))
		}
		trans = d.trans
		cur = next
		i += n
	}
	// The end of the text: the row's end column holds the answer once
	// known.
	end := &trans[int(cur)+stride-2]
	if *end == unknownState {
		next, _ := d.step(cur/int32(stride), -1)
		if next == outOfBudget {
			return d.done(next)
		}
		*end = next // matchState or deadState: at the end no state is built
	}
	return d.done(*end)
}

// done returns res, giving the scratch space back first if the search
// took it: only a search that builds states does.
func (d *dfa) done(res int32) int32 {
	if d.dfaScratch != nil {
		d.release()
	}
	return res
}

// pikeSearch is match for a State still in its Pike VM phase (see
// matchFirst): it answers as the Pike VM does and counts work as the Pike
// VM does, one unit per byte of s charged up front and one per thread at
// each position, but it keeps the transitions it works out, and the
// threads at each state, so that a text that takes the same steps again
// costs a DFA's steps. The threads at a position are the closure a DFA
// step follows, which depends on the state and on whether the character
// is a word character or the end of the text (see advance).
//
// Its transitions hold state numbers, not premultiplied ones, and may
// lead to matchState and deadState, which a DFA's never do: its DFA must
// be reset before it searches as a DFA.
func (d *dfa) pikeSearch(s string, budget int) (matched bool, work int, ok bool) {
	work = len(s)
	if work > budget {
		return false, work, false
	}
	// The Pike VM's count is kept in work; the steps' own is not used.
	d.work, d.budget, d.clears = 0, math.MaxInt, 0
	stride := d.stride
	id := d.startState()
	for i := 0; ; {
		col, kind, r, n := stride-2, 2, rune(-1), 0 // the end of the text
		if i < len(s) {
			if b := s[i]; b < utf8.RuneSelf {
				col, kind, r, n = int(d.classes[b]), 0, rune(b), 1
			} else {
				r, n = utf8.DecodeRuneInString(s[i:])
				col, kind = -1, 0 // the transition is not kept: such characters are rare here
			}
			if d.useWord && syntax.IsWordChar(r) {
				kind = 1
			}
		}
		row := int(id) * stride
		next, cost := unknownState, int32(d.states[id].threads[kind])-1
		if col >= 0 {
			next = d.trans[row+col]
		}
		if next == unknownState || cost < 0 {
			var cleared bool
			next, cleared = d.step(id, r)
			if next >= firstState*int32(stride) {
				next /= int32(stride)
			}
			cost = int32(len(d.closure.dense)) // the threads at this position
			if !cleared {
				if col >= 0 {
					d.trans[row+col] = next
				}
				if cost < 1<<16-1 {
					d.states[id].threads[kind] = uint16(cost + 1)
				}
			}
		}
		if work += int(cost); work > budget {
			d.done(0)
			return false, work, false
		}
		if next < firstState || r >= 0x10000 && d.p.midEmpty && !d.p.anchorStart {
			d.done(0)
			return next == matchState || next >= firstState, work, true
		}
		id = next
		i += n
	}
}

// accelAfter is how many bytes a state must stay on before it gets an
// acceleration table: short strings never pay for one.
const accelAfter = 8

// accelerate builds the table of the ASCII bytes on which the state at
// row cur stays, from the transitions known so far, and returns its
// number (1-based).
func (d *dfa) accelerate(cur int32) int32 {
	var acc [256]bool
	for b := range 128 {
		acc[b] = d.trans[int(cur)+int(d.classes[b])] == cur
	}
	d.accels = append(d.accels, acc)
	k := int32(len(d.accels))
	d.trans[int(cur)+d.stride-1] = k
	return k
}

// runeSets are bitmaps of every code point plus one, for sortBounds.
var runeSets = sync.Pool{New: func() any { return new([(utf8.MaxRune + 2 + 63) / 64]uint64) }}

// sortBounds sorts the class boundaries bs and drops duplicates, in place.
// A program of many large classes has hundreds of thousands of them (each
// [\p{L}…] class about 1,300), which a bitmap of the code points sorts
// in time linear in their number instead of a comparison sort's n log n.
func sortBounds(bs []rune) []rune {
	if len(bs) < 4096 {
		slices.Sort(bs)
		return slices.Compact(bs)
	}
	set := runeSets.Get().(*[(utf8.MaxRune + 2 + 63) / 64]uint64)
	for _, b := range bs {
		set[b>>6] |= 1 << (b & 63)
	}
	out := bs[:0]
	for i, w := range set {
		for w != 0 {
			out = append(out, rune(i<<6+bits.TrailingZeros64(w)))
			w &= w - 1
		}
		set[i] = 0
	}
	runeSets.Put(set)
	return out
}
