package preflight

import "github.com/agentpreflight/preflight/internal/pattern"

// compiledPattern is a pattern compiled once for a schema document, with
// what it counted against the document's limits.
type compiledPattern struct {
	re           *pattern.Pattern
	size, ranges int
	index        int32 // the pattern's place in the document, for the validator's matcher states
}

// patternSet holds the patterns a schema document compiled, by source
// text, so that a pattern the document repeats (the same email or id
// pattern in several places is common) is compiled once, and the DFA one
// validation builds for it serves every place that uses it.
type patternSet struct {
	first    [patternSetLinear]compiledPattern // the first few, searched in order
	n        int                               // how many of first are used
	bySource map[string]compiledPattern        // all of them, once there are more
}

// patternSetLinear is how many patterns are searched one by one before
// the set builds a map.
const patternSetLinear = 8

func (ps *patternSet) find(src string) (compiledPattern, bool) {
	if ps.bySource != nil {
		p, ok := ps.bySource[src]
		return p, ok
	}
	for _, p := range ps.first[:ps.n] {
		if p.re.String() == src {
			return p, true
		}
	}
	return compiledPattern{}, false
}

// len is the number of patterns in the set.
func (ps *patternSet) len() int {
	if ps.bySource != nil {
		return len(ps.bySource)
	}
	return ps.n
}

// add adds p, numbering it: the patterns of a document are numbered 0, 1,
// … in the order they are added.
func (ps *patternSet) add(p compiledPattern) compiledPattern {
	p.index = int32(ps.n)
	if ps.bySource != nil {
		p.index = int32(len(ps.bySource))
	}
	if ps.bySource == nil && ps.n < patternSetLinear {
		ps.first[ps.n] = p
		ps.n++
		return p
	}
	if ps.bySource == nil {
		ps.bySource = make(map[string]compiledPattern, 2*patternSetLinear)
		for _, q := range ps.first[:ps.n] {
			ps.bySource[q.re.String()] = q
		}
	}
	ps.bySource[p.re.String()] = p
	return p
}
