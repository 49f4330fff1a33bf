// Package pattern compiles JSON Schema "pattern" regular expressions, which
// are ECMA-262 patterns read with JavaScript's u flag, and answers whether a
// string contains a match, as RegExp(p, "u").test(s) does, for a validator
// that compiles a fresh schema on every call.
//
// The front end is its own ECMA-262 parser (ecma.go; Unicode property data
// in props.go and the generated unicode_tables.go): syntax JavaScript
// rejects is refused with the piece and its offset, and so are lookaround
// and back-references, which are not regular. The tree compiles straight
// into a compact, pointer-free Thompson program (compile.go), bounded in
// size before it is built. Matching runs a lazily built DFA over that
// program (dfa.go): time linear in the input, a bounded state cache, and a
// mode that stops building states when the cache thrashes. Three cheaper
// paths come first: a pattern that is a fixed sequence of ASCII sets (a
// UUID) tests its bytes against their sets, eight at a time where that
// pays (fixed.go); a pattern that starts with one (a timestamp's date and
// time) tests its first bytes so and leaves only the rest to the matcher;
// and a pattern's first short texts run on a Pike VM over the same
// program, which needs no DFA (see pikePromote). The Pike VM is also the
// reference the DFA is tested against.
package pattern

import (
	"math"
	"regexp/syntax"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Pattern is a compiled pattern. It is safe for concurrent use.
//
// Its program is held in its own compact form rather than as a
// syntax.Prog: instructions and rune ranges are two arrays without
// pointers, which the runtime allocates without type metadata and the
// collector never scans.
type Pattern struct {
	src         string
	insts       []inst
	runes       []rune // the ranges of opClass instructions
	start       uint32
	anchorStart bool // the program can only match at the start of the text
	// midEmpty: the program matches the empty string between two non-word
	// characters that are neither the first nor the last. V8 tries such
	// an empty match between the two halves of a surrogate pair too,
	// so a text with a character beyond U+FFFF contains one.
	midEmpty bool

	fixed *fixedSeq // the fast path of a fixed sequence of ASCII sets, or nil
	// prefix is a fixed sequence of ASCII sets the pattern starts with,
	// and the pattern that goes on from it, anchored where the sequence
	// ends; nil unless fixedOf found one.
	prefix *prefixed

	mu  sync.Mutex // guards own
	own State      // MatchString's matcher, kept warm across calls

	// warm is the DFA MatchBudgetShared runs pikeSearch on in place of the
	// Pike VM proper, kept across calls; warmMu guards it and warmOff,
	// set once it outgrew warmMaxBytes and was dropped for good.
	warmMu  sync.Mutex
	warm    *dfa
	warmOff bool
}

// opcode is an instruction's operation.
type opcode uint8

// The operations. Rune instructions are split by how they match, so the
// matcher needs no look at rune counts or flags.
const (
	opFail     opcode = iota // no thread gets past it
	opMatch                  // the text matches
	opAlt                    // try out and arg
	opNop                    // go on to out (also what captures become)
	opEmpty                  // go on to out if the conditions in arg hold
	opRune1                  // a rune equal to arg
	opFold                   // a rune equal to arg or to one of its simple case folds
	opRange                  // a rune in arg..end
	opClass                  // a rune in one of the ranges runes[arg:end]
	opAny                    // any rune
	opAnyNotNL               // any rune but '\n'
)

// inst is one instruction. It holds no pointers, so that a program is
// noscan memory; rune ranges live in Pattern.runes, named by index.
type inst struct {
	op  opcode
	out uint32 // the next instruction
	arg uint32 // opAlt: the other branch; opEmpty: a syntax.EmptyOp; opRune1, opFold, opRange: a rune; opClass: where its ranges start
	end uint32 // opRange: the last rune; opClass: where its ranges end
}

// Compile parses src as an ECMA-262 pattern under the u flag (what
// JavaScript's RegExp(src, "u") accepts) and compiles it when its program
// needs at most limit instructions. It returns the estimated program size
// too. A pattern that cannot be compiled gets an *Error, and so does one
// over the limit: its OverSize is set, its Piece is the term at which the
// program went over, and the size returned is more than limit.
func Compile(src string, limit int) (*Pattern, int, error) {
	p, size, _, err := CompileWithin(src, limit, math.MaxInt)
	return p, size, err
}

// CompileWithin is Compile with a bound on the character-class ranges
// the pattern may hold: rangeRoom counts one per range of every class as
// written (a \p{L} is about 680, [a-z0-9_] three, \d one) before
// classes are merged, and bounds the work of parsing and compiling
// classes, which the program's instruction count does not see (a
// [\p{L}] is one instruction). A pattern that needs more is refused with
// an *Error whose OverRanges is set and whose Piece is the class that went
// over. It returns the ranges the pattern used too, so that a caller can
// share one room among many patterns.
func CompileWithin(src string, limit, rangeRoom int) (p *Pattern, size, ranges int, err error) {
	tree, parsed, ranges, err := parseECMA(src, rangeRoom)
	if err != nil {
		return nil, 0, ranges, err
	}
	defer parsed.release()
	size = EstimateSize(tree, limit+1) + 2 // the program's fail and match instructions
	if size > limit {
		return nil, size, ranges, overSizeError(src, rangeRoom, limit-2)
	}
	p = parsed.comp.compileTree(src, tree, limit)
	if p == nil {
		return nil, limit + 1, ranges, overSizeError(src, rangeRoom, limit-2)
	}
	return p, len(p.insts), ranges, nil
}

// newPattern returns the Pattern of a compiled program, with what the
// matchers need to know of the program as a whole worked out. A pattern
// with a fixed sequence's fast path (see fixedOf) is allocated in one
// piece with it.
func newPattern(m *machine, src string, insts []inst, runes []rune, start uint32) *Pattern {
	view := Pattern{src: src, insts: insts, runes: runes, start: start}
	view.analyze(m)
	var fs fixedScan
	var p *Pattern
	switch fixedOf(&view, &fs) {
	case fixedWhole:
		both := new(struct {
			Pattern
			seq fixedSeq
		})
		p = &both.Pattern
		p.fixed = &both.seq
		p.fixed.init(fs.at[:fs.n], fs.sets, fs.nsets, fs.end)
	case fixedPrefix:
		both := new(struct {
			Pattern
			pre prefixed
		})
		p = &both.Pattern
		p.prefix = &both.pre
		p.prefix.seq.init(fs.at[:fs.n], fs.sets, fs.nsets, false)
		// rest shares the program; it has no ^ or \b to tell it is not
		// at the start of the text.
		p.prefix.rest = Pattern{src: src, insts: insts, runes: runes, start: fs.rest, anchorStart: true}
	default:
		p = new(Pattern)
	}
	p.src, p.insts, p.runes, p.start = src, insts, runes, start
	p.anchorStart, p.midEmpty = view.anchorStart, view.midEmpty
	return p
}

// analyze sets what the matchers need to know of the program as a whole
// but its fast paths, following its empty-width instructions with m.
func (p *Pattern) analyze(m *machine) {
	p.anchorStart = p.startCond()&syntax.EmptyBeginText != 0
	m.cur.reset(len(p.insts))
	m.follow(p.insts, &m.cur, p.start, syntax.EmptyNoWordBoundary)
	for _, pc := range m.cur.dense {
		p.midEmpty = p.midEmpty || p.insts[pc].op == opMatch
	}
}

// startCond returns the empty-width conditions every match must begin
// with, as syntax.Prog.StartCond does.
func (p *Pattern) startCond() syntax.EmptyOp {
	var flag syntax.EmptyOp
	for pc := p.start; ; {
		in := &p.insts[pc]
		switch in.op {
		case opEmpty:
			flag |= syntax.EmptyOp(in.arg)
		case opFail:
			return ^syntax.EmptyOp(0)
		case opNop:
		default:
			return flag
		}
		pc = in.out
	}
}

// String returns the source text of the pattern.
func (p *Pattern) String() string { return p.src }

// EstimateSize counts how many instructions re compiles to (the compiler
// expands repetitions as RE2 does: x{n,m} is n copies of x and m-n
// optional ones), without the program's fail and match instructions. It
// stops counting once the total exceeds limit, so it never overflows.
func EstimateSize(re *syntax.Regexp, limit int) int {
	n := 1
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpCapture:
		n = EstimateSize(re.Sub[0], limit) + 2
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		n = EstimateSize(re.Sub[0], limit) + 1
	case syntax.OpRepeat:
		x := EstimateSize(re.Sub[0], limit)
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
		for _, sub := range re.Sub {
			n += EstimateSize(sub, limit)
			if n > limit {
				break
			}
		}
	}
	return min(n, limit)
}

// Matching with a State runs its first short texts on the Pike VM, which
// needs no memory of its own, and builds the State's DFA once the Pike VM
// has spent pikePromote units of work in it or it is given a text longer
// than pikeMaxText: most patterns of a schema sent with one request see a
// value or two, for which making a DFA and building its states costs more
// than the Pike VM's steps, while a pattern that sees many values (a batch
// of events), a long one or one with many threads soon has its DFA, which
// steps over each state once.
const (
	pikeMaxText = 64
	pikePromote = 256
	pikeAlone   = 4 // see matchFirst
)

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

// MatchString reports whether s contains a match of p, as JavaScript's
// RegExp(p, "u").test(s) does. It keeps one matcher State in p, so that
// repeated calls reuse the DFA states earlier ones built; a call that finds
// it in use by another goroutine matches with a fresh one.
func (p *Pattern) MatchString(s string) bool {
	if p.fixed != nil {
		return p.fixed.match(s) // keeps no state
	}
	if !p.mu.TryLock() {
		var st State
		matched, _, _ := p.MatchBudget(&st, s, math.MaxInt)
		return matched
	}
	defer p.mu.Unlock()
	matched, _, _ := p.MatchBudget(&p.own, s, math.MaxInt)
	return matched
}

// State is what matching has built for one pattern and keeps for the next
// match: the lazily built DFA, or the work the Pike VM has done before
// there is one. Its zero value is ready to use. A State must be used with
// one pattern only, and by one goroutine at a time.
//
// What a match costs depends on the State it is given (a state the DFA has
// built before costs nothing to build again), so a caller that needs the
// same count for the same texts gives each run its own State: a validator
// uses a fresh one per pattern per validation.
type State struct {
	dfa *dfa
	// pike keeps the transitions the Pike VM phase has worked out once
	// pikeAlone texts have run on the Pike VM proper (see matchFirst); it
	// becomes dfa, emptied, when the phase ends.
	pike      *dfa
	pikeWork  int
	pikeTexts int // the texts the Pike VM proper has run, up to pikeAlone
}

// MatchBudget is MatchString with a bound on the work it may do, for a
// caller that bounds the CPU time of a request, matching with st. Work is
// counted in units: one per byte of s, plus one per program instruction
// visited while the lazy DFA builds a state st does not hold yet, or one
// per thread at each position while the Pike VM runs (either is at most
// the program's size per character, so the total is at most len(s) times
// the program size). It returns the work spent; ok is false, and matched
// meaningless, when the search stopped because it would have spent more
// than budget. The work is a function of p, st's history and s alone.
func (p *Pattern) MatchBudget(st *State, s string, budget int) (matched bool, work int, ok bool) {
	return p.matchBudget(st, s, budget, false)
}

// MatchBudgetShared is MatchBudget for a pattern that matches text after
// text across many States (a pattern of a compiled schema that is kept
// and validated against again and again): it answers, and counts work,
// exactly as MatchBudget does with st, but the texts MatchBudget runs on
// the Pike VM proper run on a DFA that p keeps across calls and that
// counts work as the Pike VM does (pikeSearch), so that a step taken
// before costs a table lookup. The kept DFA is bounded by WarmBytes; one
// that outgrows it is dropped and p goes back to the Pike VM. A call
// that finds it in use by another goroutine runs the Pike VM.
func (p *Pattern) MatchBudgetShared(st *State, s string, budget int) (matched bool, work int, ok bool) {
	return p.matchBudget(st, s, budget, true)
}

// WarmBytes bounds the memory MatchBudgetShared keeps in a pattern.
const WarmBytes = 8 << 10

func (p *Pattern) matchBudget(st *State, s string, budget int, shared bool) (matched bool, work int, ok bool) {
	if f := p.fixed; f != nil {
		// The DFA's count: one unit per byte of s, charged up front.
		if len(s) > budget {
			return false, len(s), false
		}
		return f.match(s), len(s), true
	}
	if pp := p.prefix; pp != nil {
		// The prefix's bytes up front, the rest's as it counts them. Only
		// the rest uses a State, so it can have p's.
		if len(s) > budget {
			return false, len(s), false
		}
		if !pp.seq.match(s) {
			return false, len(s), true
		}
		n := pp.seq.n
		if d := st.dfa; d != nil { // most calls: straight to the DFA
			matched, work, ok = d.match(s[n:], budget-n)
		} else {
			matched, work, ok = pp.rest.matchFirst(st, s[n:], budget-n, shared)
		}
		return matched, work + n, ok
	}
	if d := st.dfa; d != nil {
		return d.match(s, budget)
	}
	return p.matchFirst(st, s, budget, shared)
}

// matchFirst is MatchBudget for a State that has no DFA yet: the Pike VM
// runs, or the DFA is made.
//
// The Pike VM phase runs its first pikeAlone texts on the Pike VM proper,
// which needs no memory (most patterns see no more); the next ones run on
// a DFA that counts work as the Pike VM does (pikeSearch), so that a
// pattern that sees more values steps over each state once there too.
// When the phase ends, that DFA is emptied and goes on as the State's
// DFA, which counts as a new one does: the work of a text is the same
// whichever way the phase ran it.
//
// With shared set, the Pike VM proper's texts run on p's warm DFA when
// it is free (see MatchBudgetShared), which answers and counts alike.
func (p *Pattern) matchFirst(st *State, s string, budget int, shared bool) (matched bool, work int, ok bool) {
	if len(s) <= pikeMaxText && st.pikeWork < pikePromote {
		if st.pikeTexts < pikeAlone {
			st.pikeTexts++
			var warm bool
			if shared {
				matched, work, ok, warm = p.warmSearch(s, budget)
			}
			if !warm {
				matched, work, ok = p.pikeBudget(s, budget)
			}
		} else {
			if st.pike == nil {
				st.pike = newDFA(p)
			}
			matched, work, ok = st.pike.pikeSearch(s, budget)
		}
		st.pikeWork += work
		return matched, work, ok
	}
	if d := st.pike; d != nil {
		d.reset()
		st.dfa, st.pike = d, nil
	} else {
		st.dfa = newDFA(p)
	}
	return st.dfa.match(s, budget)
}

// warmSearch runs pikeSearch for s on p's warm DFA, making it if need be,
// and reports whether it ran: not when another goroutine holds the DFA or
// p gave it up. A DFA that has grown past WarmBytes is dropped, and p
// keeps none from then on.
func (p *Pattern) warmSearch(s string, budget int) (matched bool, work int, ok, ran bool) {
	if !p.warmMu.TryLock() {
		return false, 0, false, false
	}
	defer p.warmMu.Unlock()
	if p.warmOff {
		return false, 0, false, false
	}
	d := p.warm
	if d == nil {
		d = newDFA(p)
		p.warm = d
	}
	matched, work, ok = d.pikeSearch(s, budget)
	if d.bytes() > WarmBytes {
		p.warm, p.warmOff = nil, true
	}
	return matched, work, ok, true
}

// pikeMatch reports whether s contains a match of p, running the program
// as a Pike VM: one step of every live thread per character.
func (p *Pattern) pikeMatch(s string) bool {
	matched, _, _ := p.pikeBudget(s, math.MaxInt)
	return matched
}

// pikeBudget is pikeMatch with MatchBudget's bound on work. It counts one
// unit per byte of s, charged up front as the DFA does, plus one per
// thread at each position: at most the program's size per character, the
// bound the DFA has when it builds a state for every character.
func (p *Pattern) pikeBudget(s string, budget int) (matched bool, work int, ok bool) {
	work = len(s)
	if work > budget {
		return false, work, false
	}
	m := machines.Get().(*machine)
	defer machines.Put(m)
	n := len(p.insts)
	m.cur.reset(n)
	m.next.reset(n)
	now, later := &m.cur, &m.next // swapped as pointers: no write barriers
	insts := p.insts
	// Each character is decoded once, as the one after the position
	// before, and so are the empty-width conditions between two
	// characters: ctx holds those before r.
	r, width := runeAt(s, 0)
	ctx := syntax.EmptyOpContext(-1, r)
	for pos := 0; ; {
		if pos == 0 || !p.anchorStart {
			m.follow(insts, now, p.start, ctx)
		}
		if work += len(now.dense); work > budget {
			return false, work, false
		}
		if len(now.dense) == 0 && (p.anchorStart || pos >= len(s)) {
			return false, work, true
		}
		if r >= 0x10000 && p.midEmpty && !p.anchorStart {
			return true, work, true
		}
		if pos >= len(s) {
			// No rune left to consume: only a thread at a match counts.
			for _, pc := range now.dense {
				if insts[pc].op == opMatch {
					return true, work, true
				}
			}
			return false, work, true
		}
		next, nextWidth := runeAt(s, pos+width)
		ctx = syntax.EmptyOpContext(r, next)
		for _, pc := range now.dense {
			in := &insts[pc]
			var ok bool
			switch in.op {
			case opMatch:
				return true, work, true
			case opRune1:
				ok = r == rune(in.arg)
			case opRange:
				ok = rune(in.arg) <= r && r <= rune(in.end)
			default:
				// The instructions that consume nothing were followed
				// when the thread came.
				ok = in.op >= opRune1 && p.accepts(in, r)
			}
			if ok {
				m.follow(insts, later, in.out, ctx)
			}
		}
		pos += width
		r, width = next, nextWidth
		now, later = later, now
		later.dense = later.dense[:0]
	}
}

// runeAt returns the character of s at i and its width, or -1 and 0 at
// the end of s.
func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// accepts reports whether the instruction in consumes r; only rune
// instructions do.
func (p *Pattern) accepts(in *inst, r rune) bool {
	switch in.op {
	case opRune1:
		return r == rune(in.arg)
	case opRange:
		return rune(in.arg) <= r && r <= rune(in.end)
	case opClass:
		return inClass(p.runes[in.arg:in.end], r)
	case opFold:
		return foldsTo(rune(in.arg), r)
	case opAny:
		return true
	case opAnyNotNL:
		return r != '\n'
	}
	return false
}

// inClass reports whether r is in one of the sorted ranges rs, searching
// as syntax.Inst.MatchRunePos does: in order for a few pairs, by halves
// for more.
func inClass(rs []rune, r rune) bool {
	if len(rs) <= 8 {
		for j := 0; j+1 < len(rs); j += 2 {
			if r < rs[j] {
				return false
			}
			if r <= rs[j+1] {
				return true
			}
		}
		return false
	}
	lo, hi := 0, len(rs)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c := rs[2*m]; c <= r {
			if r <= rs[2*m+1] {
				return true
			}
			lo = m + 1
		} else {
			hi = m
		}
	}
	return false
}

// foldsTo reports whether r is r0 or in r0's orbit of simple case folds,
// the test syntax.Inst.MatchRunePos makes for a FoldCase literal.
func foldsTo(r0, r rune) bool {
	if r == r0 {
		return true
	}
	for r1 := unicode.SimpleFold(r0); r1 != r0; r1 = unicode.SimpleFold(r1) {
		if r == r1 {
			return true
		}
	}
	return false
}

// follow adds to l the threads reachable from pc without consuming input,
// given the empty-width conditions that hold at the position (ctx).
func (m *machine) follow(insts []inst, l *threadList, pc uint32, ctx syntax.EmptyOp) {
	if op := insts[pc].op; op >= opRune1 || op == opMatch || op == opFail {
		if !l.has(pc) { // most threads: no empty moves to follow
			l.add(pc)
		}
		return
	}
	m.stack = append(m.stack[:0], pc)
	for len(m.stack) > 0 {
		pc := m.stack[len(m.stack)-1]
		m.stack = m.stack[:len(m.stack)-1]
		if l.has(pc) {
			continue
		}
		l.add(pc)
		in := &insts[pc]
		switch in.op {
		case opAlt:
			m.stack = append(m.stack, in.arg, in.out)
		case opNop:
			m.stack = append(m.stack, in.out)
		case opEmpty:
			if syntax.EmptyOp(in.arg)&^ctx == 0 {
				m.stack = append(m.stack, in.out)
			}
		}
	}
}
