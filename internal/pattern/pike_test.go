package pattern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp/syntax"
	"testing"
	"unicode/utf8"
)

// simplePike is the Pike VM as first written: each character decoded
// twice and the empty-width conditions worked out twice per position, every
// thread tested by accepts. pikeBudget must answer as it does and count the
// same work, which a request's work ceiling depends on.
func (p *Pattern) simplePike(s string, budget int) (matched bool, work int, ok bool) {
	work = len(s)
	if work > budget {
		return false, work, false
	}
	m := new(machine)
	n := len(p.insts)
	m.cur.reset(n)
	m.next.reset(n)
	now, later := &m.cur, &m.next
	prev := rune(-1)
	for pos := 0; ; {
		r, width := rune(-1), 0
		if pos < len(s) {
			r, width = utf8.DecodeRuneInString(s[pos:])
		}
		if pos == 0 || !p.anchorStart {
			m.follow(p.insts, now, p.start, syntax.EmptyOpContext(prev, r))
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
			for _, pc := range now.dense {
				if p.insts[pc].op == opMatch {
					return true, work, true
				}
			}
			return false, work, true
		}
		next := rune(-1)
		if pos+width < len(s) {
			next, _ = utf8.DecodeRuneInString(s[pos+width:])
		}
		after := syntax.EmptyOpContext(r, next)
		for _, pc := range now.dense {
			in := &p.insts[pc]
			if in.op == opMatch {
				return true, work, true
			}
			if p.accepts(in, r) {
				m.follow(p.insts, later, in.out, after)
			}
		}
		pos += width
		prev = r
		now, later = later, now
		later.dense = later.dense[:0]
	}
}

// TestPikeCountsAsSimplePike checks pikeBudget against simplePike on the
// hand-written cases and on the random patterns and texts of the V8
// test, with and without a budget that runs out.
func TestPikeCountsAsSimplePike(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 2026))
	jobs := patternJobs(r, 3000, 8)
	checked := 0
	for _, j := range jobs {
		for _, q := range j.ps {
			for _, s := range j.in {
				m0, w0, ok0 := q.simplePike(s, math.MaxInt)
				m1, w1, ok1 := q.pikeBudget(s, math.MaxInt)
				if m0 != m1 || w0 != w1 || ok0 != ok1 {
					t.Fatalf("%q on %q: pikeBudget %v, %d, %v; simplePike %v, %d, %v", j.src, s, m1, w1, ok1, m0, w0, ok0)
				}
				budget := r.IntN(w0 + 1)
				m0, w0, ok0 = q.simplePike(s, budget)
				m1, w1, ok1 = q.pikeBudget(s, budget)
				if ok0 != ok1 || w0 != w1 || ok0 && m0 != m1 {
					t.Fatalf("%q on %q, budget %d: pikeBudget %v, %d, %v; simplePike %v, %d, %v", j.src, s, budget, m1, w1, ok1, m0, w0, ok0)
				}
				checked++
			}
		}
	}
	t.Logf("%d patterns, %d texts checked", len(jobs), checked)
}

// TestStateCountsAsBefore runs texts one after another with a State, as a
// validator does with the values of one pattern, and checks each answer
// and count against the matching as first written: simplePike while the
// Pike VM phase lasts, then a new DFA that runs search alone. pikeSearch
// keeps the phase's transitions in a DFA, the DFA that follows is that
// one emptied, and run tries known transitions before search: this holds
// them to the counts a request's work ceiling was set with.
func TestStateCountsAsBefore(t *testing.T) {
	defer func(s, k int) { maxDFAStates, maxDFAKernels = s, k }(maxDFAStates, maxDFAKernels)
	for _, limits := range [][2]int{{maxDFAStates, maxDFAKernels}, {6, 1 << 18}, {1 << 12, 24}} {
		maxDFAStates, maxDFAKernels = limits[0], limits[1]
		t.Run(fmt.Sprintf("cache=%d,%d", limits[0], limits[1]), stateCountsAsBefore)
	}
}

// stateCountsAsBefore is TestStateCountsAsBefore with the cache bounds
// set.
func stateCountsAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 2026))
	jobs := patternJobs(r, 2000, 6)
	runs := 0
	for _, j := range jobs {
		for _, q := range j.ps {
			q = general(q)
			var st State
			var ref stateRef
			for k := range 60 {
				s := j.in[r.IntN(len(j.in))]
				budget := math.MaxInt
				if k%5 == 4 {
					budget = r.IntN(4 * (len(s) + 1) * len(q.insts))
				}
				m0, w0, ok0 := ref.match(q, s, budget)
				m1, w1, ok1 := q.MatchBudget(&st, s, budget)
				if ok0 != ok1 || w0 != w1 || ok0 && m0 != m1 {
					t.Fatalf("%q, text %d %q, budget %d: got %v, %d, %v; want %v, %d, %v", j.src, k, s, budget, m1, w1, ok1, m0, w0, ok0)
				}
			}
			runs++
		}
	}
	t.Logf("%d patterns run with a State", runs)
}

// stateRef is a State's matching as first written: simplePike while the
// Pike VM phase lasts, then a new DFA that runs search alone, from the
// start of each text rather than on run's known transitions first.
type stateRef struct {
	dfa      *dfa
	pikeWork int
}

// match is MatchBudget on the general path (no fixed sequence, no
// prefix) as first written.
func (ref *stateRef) match(p *Pattern, s string, budget int) (matched bool, work int, ok bool) {
	if ref.dfa == nil && len(s) <= pikeMaxText && ref.pikeWork < pikePromote {
		matched, work, ok = p.simplePike(s, budget)
		ref.pikeWork += work
		return matched, work, ok
	}
	if ref.dfa == nil {
		ref.dfa = newDFA(p)
	}
	res := ref.dfa.search(s, budget, 0, unknownState)
	return res == matchState, ref.dfa.work, res != outOfBudget
}

// general returns p on the general path: without its fixed sequence or
// prefix, if it has one.
func general(p *Pattern) *Pattern {
	return &Pattern{src: p.src, insts: p.insts, runes: p.runes, start: p.start, anchorStart: p.anchorStart, midEmpty: p.midEmpty}
}

// patternJob is a pattern, compiled, and texts to match it against: ps
// holds the pattern and, when it has a fixed prefix, the pattern that
// goes on from it.
type patternJob struct {
	src string
	ps  []*Pattern
	in  []string
}

// patternJobs returns the hand-written cases with their inputs, and n
// random patterns of the V8 test's generator, each with k samples, k
// near misses and the edge inputs; those that compile.
func patternJobs(r *rand.Rand, n, k int) []patternJob {
	var jobs []patternJob
	add := func(src string, in []string) {
		p, _, err := Compile(src, 1<<12)
		if err != nil {
			return
		}
		j := patternJob{src, []*Pattern{p}, in}
		if p.prefix != nil {
			j.ps = append(j.ps, &p.prefix.rest)
		}
		jobs = append(jobs, j)
	}
	for _, c := range cases {
		add(c.pattern, inputs)
	}
	for range n {
		g := gen{r: r}
		node := g.disjunction(3)
		var in []string
		for range k {
			in = append(in, node.sample(r), mutate(r, node.sample(r)))
		}
		add(node.src, append(in, edgeInputs...))
	}
	return jobs
}
