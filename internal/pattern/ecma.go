package pattern

import (
	"math"
	"regexp/syntax"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Error says why a pattern was refused: the piece of the pattern at fault,
// where it starts (in characters, counted from 0, as JavaScript indexes a
// string of BMP characters) and why.
type Error struct {
	Offset int    // the piece's position in the pattern, in code points
	Piece  string // the offending text, as written
	Reason string // what is wrong with it
	// Unsupported marks syntax that ECMA-262 defines but that no
	// linear-time matcher can run (lookaround, back-references); the rest
	// are patterns JavaScript's RegExp(p, "u") rejects too.
	Unsupported bool
	// OverRanges marks a pattern whose character classes hold more
	// ranges than CompileWithin allowed (Piece is the class that went
	// over); the pattern itself may be valid.
	OverRanges bool
	// TooDeep marks a pattern whose groups nest deeper than this package
	// parses (Piece is the group that went over); it may be valid.
	TooDeep bool
	// OverSize marks a valid pattern whose program would take more
	// instructions than CompileWithin allowed (Piece is the term at which
	// it went over).
	OverSize bool
}

func (e *Error) Error() string {
	if e.Unsupported {
		return e.Reason + " " + strconv.Quote(e.Piece) + " at offset " + strconv.Itoa(e.Offset) + " is not supported: " + NotRegular
	}
	return e.Reason + ": " + strconv.Quote(e.Piece) + " at offset " + strconv.Itoa(e.Offset)
}

// NotRegular says why lookaround and back-references are refused.
const NotRegular = "lookaround and back-references are not regular, and patterns here are matched in linear time by a DFA"

// maxCount is where a {n,m} bound saturates. Any repetition this large is
// over every program size limit, so the exact number never matters.
const maxCount = 100000

// maxDepth bounds the nesting of groups, so that parsing cannot exhaust
// the stack.
const maxDepth = 1000 // as RE2 allows

// parser reads an ECMA-262 pattern with the u flag (and no others) into a
// regexp/syntax tree, which then compiles to the program the matcher runs.
type parser struct {
	src   string
	pos   int
	names map[string]bool // named groups seen, to refuse duplicates as V8 does

	// A pattern that is valid but not regular is refused only once the
	// whole of it has parsed, so that an invalid one is called invalid
	// whatever comes first: notRegular is its first lookaround or
	// back-reference, and refs the back-references, which are valid only
	// if the group they name or number exists somewhere in the pattern.
	groups     int // capturing groups
	notRegular *Error
	refs       []backRef

	// The tree lives only until it is compiled, so its nodes, their
	// child lists and class ranges come from buffers reused across
	// parses (parsers are pooled). Nodes are allocated in chunks that
	// never move; the other two are slices of arrays that may be
	// replaced as they grow, which leaves earlier slices intact.
	chunks [][]syntax.Regexp
	used   int // nodes taken from the last chunk
	subs   []*syntax.Regexp
	ranges []rune
	spans  []span
	stack  []*syntax.Regexp // terms and alternatives being collected
	terms  []termAt         // where each term was written, when recordTerms
	// recordTerms is set for the parse overSizeError makes again to
	// name the piece at fault; the first parse of a pattern, which
	// mostly fits, records nothing.
	recordTerms bool

	// rangeRoom is how many class ranges the pattern may still take (see
	// CompileWithin); a class past it stops the parse.
	rangeRoom int

	comp compiler // compiles the tree, pooled with the parser
}

var parsers = sync.Pool{New: func() any { return new(parser) }}

const chunkSize = 64

// node returns a zeroed node with op. The nodes of a chunk are zero until
// they are taken (a new chunk is, and release clears the ones a parse
// took), so only op is set: zeroing a node, which holds pointers, would
// cost write barriers while the collector runs.
func (p *parser) node(op syntax.Op) *syntax.Regexp {
	if len(p.chunks) == 0 || p.used == chunkSize {
		p.chunks = append(p.chunks, make([]syntax.Regexp, chunkSize))
		p.used = 0
	}
	re := &p.chunks[len(p.chunks)-1][p.used]
	p.used++
	re.Op = op
	return re
}

// pop drops the stack's entries from base on, clearing them so that the
// pooled parser keeps no pointer into the tree.
func (p *parser) pop(base int) {
	clear(p.stack[base:])
	p.stack = p.stack[:base]
}

// keepSubs copies list into the parser's child lists.
func (p *parser) keepSubs(list []*syntax.Regexp) []*syntax.Regexp {
	at := len(p.subs)
	p.subs = append(p.subs, list...)
	return p.subs[at:len(p.subs):len(p.subs)]
}

// release returns p to the pool unless a large pattern grew its buffers.
func (p *parser) release() {
	if len(p.chunks) > 16 || cap(p.subs) > 1<<12 || cap(p.ranges) > 1<<14 || cap(p.stack) > 1<<10 || cap(p.terms) > 1<<12 {
		return
	}
	for i, c := range p.chunks {
		if i == len(p.chunks)-1 {
			c = c[:p.used]
		}
		clear(c) // drop the pointers into the tree
	}
	p.chunks = p.chunks[:min(len(p.chunks), 1)]
	p.used = 0
	// subs and terms only grow during a parse, and the stack is cleared
	// as it is popped: clearing the parts used, not whole capacities,
	// spares a write barrier per slot while the GC is marking.
	clear(p.subs)
	clear(p.terms)
	p.subs, p.ranges, p.stack, p.terms, p.names, p.src = p.subs[:0], p.ranges[:0], p.stack[:0], p.terms[:0], nil, ""
	p.groups, p.notRegular, p.refs, p.recordTerms = 0, nil, p.refs[:0], false
	parsers.Put(p)
}

// parseECMA parses src as RegExp(src, "u") would. The tree is valid until
// p.release; callers compile it first.
func parseECMA(src string, rangeRoom int) (*syntax.Regexp, *parser, int, error) {
	p := parsers.Get().(*parser)
	p.src, p.pos, p.rangeRoom = src, 0, rangeRoom
	re, err := p.parse()
	left := p.rangeRoom
	if err != nil {
		p.release()
		return nil, nil, rangeRoom - left, err
	}
	return re, p, rangeRoom - left, nil
}

// takeRanges spends n class ranges of the parse's room and reports whether
// they were there.
func (p *parser) takeRanges(n int) bool {
	p.rangeRoom -= n
	return p.rangeRoom >= 0
}

// overRanges is the error for the class, from start to the parser's
// position, that took the last of the room for class ranges.
func (p *parser) overRanges(start int) *Error {
	e := p.errAt(start, p.pos, "the character class takes the pattern past its limit on class ranges")
	e.OverRanges = true
	return e
}

func (p *parser) parse() (*syntax.Regexp, error) {
	src := p.src
	if !utf8.ValidString(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return nil, p.errAt(i, i+1, "the pattern is not valid UTF-8")
	}
	re, err := p.disjunction(0)
	if err != nil {
		return nil, err
	}
	if p.pos < len(src) { // only a ')' stops a top-level disjunction
		return nil, p.errAt(p.pos, p.pos+1, "unmatched ')'")
	}
	for _, r := range p.refs {
		switch {
		case r.name != "" && !p.names[r.name]:
			return nil, p.errAt(r.start, r.end, "invalid named reference: the pattern has no group of that name")
		case r.name == "" && r.number > p.groups:
			return nil, p.errAt(r.start, r.end, "invalid escape: a back-reference \\N needs at least N capturing groups, and the pattern has "+
				strconv.Itoa(p.groups)+" (under the u flag there are no octal escapes)")
		}
	}
	if p.notRegular != nil {
		return nil, p.notRegular
	}
	return re, nil
}

// backRef is a back-reference, by number or by name, to check once the
// pattern's groups are known.
type backRef struct {
	start, end int
	number     int
	name       string
}

// deferNotRegular notes a construct, from src[from:to], that ECMA-262
// defines but a regular-language matcher cannot run, and returns a node
// that stands for it while the rest of the pattern is parsed.
func (p *parser) deferNotRegular(from, to int, what string) *syntax.Regexp {
	if p.notRegular == nil {
		p.notRegular = p.unsupported(from, to, what)
	}
	return p.node(syntax.OpEmptyMatch)
}

// errAt builds the error for src[from:to].
func (p *parser) errAt(from, to int, reason string) *Error {
	to = min(max(to, from), len(p.src))
	for to < len(p.src) && !utf8.RuneStart(p.src[to]) {
		to++
	}
	return &Error{Offset: utf8.RuneCountInString(p.src[:from]), Piece: p.src[from:to], Reason: reason}
}

// unsupported builds the error for a construct ECMA-262 defines that a
// regular-language matcher cannot run.
func (p *parser) unsupported(from, to int, what string) *Error {
	e := p.errAt(from, to, what)
	e.Unsupported = true
	return e
}

func (p *parser) more() bool { return p.pos < len(p.src) }

func (p *parser) peekIs(b byte) bool { return p.pos < len(p.src) && p.src[p.pos] == b }

func (p *parser) lookingAt(s string) bool {
	return len(p.src)-p.pos >= len(s) && p.src[p.pos:p.pos+len(s)] == s
}

// disjunction parses Alternative ('|' Alternative)*.
func (p *parser) disjunction(depth int) (*syntax.Regexp, error) {
	base := len(p.stack) // popped on every return, without a defer's cost
	for {
		a, err := p.alternative(depth)
		if err != nil {
			p.pop(base)
			return nil, err
		}
		p.stack = append(p.stack, a)
		if !p.peekIs('|') {
			break
		}
		p.pos++
	}
	re := p.stack[base]
	if len(p.stack)-base > 1 {
		re = p.node(syntax.OpAlternate)
		re.Sub = p.keepSubs(p.stack[base:])
	}
	p.pop(base)
	return re, nil
}

// alternative parses Term*.
func (p *parser) alternative(depth int) (*syntax.Regexp, error) {
	base := len(p.stack) // popped on every return, without a defer's cost
	for p.more() && !p.peekIs('|') && !p.peekIs(')') {
		t, err := p.term(depth)
		if err != nil {
			p.pop(base)
			return nil, err
		}
		p.stack = append(p.stack, t)
	}
	var re *syntax.Regexp
	switch len(p.stack) - base {
	case 0:
		re = p.node(syntax.OpEmptyMatch)
	case 1:
		re = p.stack[base]
	default:
		re = p.node(syntax.OpConcat)
		re.Sub = p.keepSubs(p.stack[base:])
	}
	p.pop(base)
	return re, nil
}

// term parses an assertion, or an atom and its quantifier, and records
// where it was written.
func (p *parser) term(depth int) (*syntax.Regexp, error) {
	start := p.pos
	re, err := p.quantified(depth)
	if err == nil && p.recordTerms {
		p.terms = append(p.terms, termAt{re, start, p.pos})
	}
	return re, err
}

// quantified parses term's assertion, or atom and quantifier.
func (p *parser) quantified(depth int) (*syntax.Regexp, error) {
	start := p.pos
	atom, assertion, err := p.atom(depth)
	if err != nil {
		return nil, err
	}
	q := p.pos
	if !p.more() {
		return atom, nil
	}
	lo, hi := 0, 0
	switch p.src[p.pos] {
	case '*':
		lo, hi = 0, -1
		p.pos++
	case '+':
		lo, hi = 1, -1
		p.pos++
	case '?':
		lo, hi = 0, 1
		p.pos++
	case '{':
		var ok bool
		if lo, hi, ok = p.braces(); !ok {
			end := p.pos + 1 // the '{' and the digits and comma after it
			for end < len(p.src) && ('0' <= p.src[end] && p.src[end] <= '9' || p.src[end] == ',') {
				end++
			}
			return nil, p.errAt(p.pos, end, "incomplete quantifier (under the u flag a '{' must start {n}, {n,} or {n,m}; write \\{ for the character)")
		}
		if hi != -1 && hi < lo {
			return nil, p.errAt(q, p.pos, "numbers out of order in {} quantifier")
		}
		lo = min(lo, maxCount)
		if hi != -1 {
			hi = min(hi, maxCount)
		}
	default:
		return atom, nil
	}
	if assertion {
		return nil, p.errAt(start, p.pos, "nothing to repeat: an assertion cannot take a quantifier")
	}
	if p.peekIs('?') { // lazy: the same strings match
		p.pos++
	}
	var re *syntax.Regexp
	switch {
	case lo == 0 && hi == -1:
		re = p.node(syntax.OpStar)
	case lo == 1 && hi == -1:
		re = p.node(syntax.OpPlus)
	case lo == 0 && hi == 1:
		re = p.node(syntax.OpQuest)
	default:
		re = p.node(syntax.OpRepeat)
		re.Min, re.Max = lo, hi
	}
	re.Sub0[0] = atom
	re.Sub = re.Sub0[:1]
	return re, nil
}

// braces parses {n}, {n,} or {n,m} at p.pos, its numbers saturated at
// 2^31-1 as V8 reads them; ok is false, and p.pos unchanged, when there is
// none. The caller checks their order on these numbers, as V8 does
// ({100001,100000} is out of order, {3000000000,2200000000} is not), and
// then saturates them at maxCount.
func (p *parser) braces() (lo, hi int, ok bool) {
	i := p.pos + 1
	num := func() (n int, ok bool) {
		start := i
		n, i = p.decimal(i)
		return n, i > start
	}
	if lo, ok = num(); !ok {
		return 0, 0, false
	}
	hi = lo
	if i < len(p.src) && p.src[i] == ',' {
		i++
		hi = -1
		if i < len(p.src) && p.src[i] != '}' {
			if hi, ok = num(); !ok {
				return 0, 0, false
			}
		}
	}
	if i >= len(p.src) || p.src[i] != '}' {
		return 0, 0, false
	}
	p.pos = i + 1
	return lo, hi, true
}

// atom parses one atom or assertion (assertion true: it takes no
// quantifier).
func (p *parser) atom(depth int) (re *syntax.Regexp, assertion bool, err error) {
	start := p.pos
	switch c := p.src[p.pos]; c {
	case '^':
		p.pos++
		return p.node(syntax.OpBeginText), true, nil
	case '$':
		p.pos++
		return p.node(syntax.OpEndText), true, nil
	case '.':
		p.pos++
		return p.charClass(dotRanges), false, nil
	case '(':
		return p.group(depth)
	case '[':
		re, err := p.class()
		return re, false, err
	case '*', '+', '?':
		return nil, false, p.errAt(start, start+1, "nothing to repeat")
	case '{':
		if _, _, ok := p.braces(); ok {
			return nil, false, p.errAt(start, p.pos, "nothing to repeat")
		}
		return nil, false, p.errAt(start, start+1, "lone quantifier brackets (under the u flag write \\{ for the character)")
	case '}', ']':
		return nil, false, p.errAt(start, start+1, "lone quantifier brackets (under the u flag write \\"+string(c)+" for the character)")
	case '\\':
		return p.atomEscape()
	}
	if c := p.src[p.pos]; c < utf8.RuneSelf {
		p.pos++
		return p.literal(rune(c)), false, nil
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return p.literal(r), false, nil
}

// group parses a parenthesized group. A lookaround is parsed like a group
// and then noted as not regular (see deferNotRegular); it is an assertion,
// so it takes no quantifier.
func (p *parser) group(depth int) (*syntax.Regexp, bool, error) {
	start := p.pos
	if depth+1 >= maxDepth {
		e := p.errAt(start, start+1, "groups are nested more than "+strconv.Itoa(maxDepth-1)+" deep")
		e.TooDeep = true
		return nil, false, e
	}
	p.pos++ // '('
	// lookaround is "lookahead" or "lookbehind" for one, to refuse it.
	lookaround := ""
	switch {
	case p.lookingAt("?="), p.lookingAt("?!"):
		lookaround = "lookahead"
		p.pos += 2
	case p.lookingAt("?<="), p.lookingAt("?<!"):
		lookaround = "lookbehind"
		p.pos += 3
	case p.lookingAt("?:"):
		p.pos += 2
	case p.lookingAt("?<"):
		p.pos += 2
		if err := p.groupName(start); err != nil {
			return nil, false, err
		}
		p.groups++
	case p.lookingAt("?"):
		return nil, false, p.errAt(start, start+3, "invalid group (JavaScript has no inline flags such as (?i) and no (?P<name>…); use (?:…) or (?<name>…))")
	default:
		p.groups++
	}
	opened := p.pos // after "(", "(?:", "(?<name>" or a lookaround's opening
	re, err := p.disjunction(depth + 1)
	if err != nil {
		return nil, false, err
	}
	if !p.peekIs(')') {
		return nil, false, p.errAt(start, start+1, "unterminated group")
	}
	p.pos++
	if lookaround != "" {
		// An assertion: under the u flag it takes no quantifier. The
		// refusal names its opening, "(?=" to "(?<!".
		return p.deferNotRegular(start, opened, lookaround), true, nil
	}
	return re, false, nil
}

// groupName parses a group's name and its '>', refusing a name used
// before.
func (p *parser) groupName(groupStart int) error {
	start := p.pos
	name, ok := p.identifier()
	if !ok || !p.peekIs('>') {
		return p.errAt(groupStart, max(p.pos+1, start), "invalid capture group name")
	}
	p.pos++
	if p.names[name] {
		return p.errAt(groupStart, p.pos, "duplicate capture group name")
	}
	if p.names == nil {
		p.names = map[string]bool{}
	}
	p.names[name] = true
	return nil
}

// identifier parses a RegExpIdentifierName: an ID_Start character, '$' or
// '_', then ID_Continue characters, '$', ZWNJ or ZWJ; any of them may be
// written as a \u escape.
func (p *parser) identifier() (string, bool) {
	var name []rune
	for p.more() {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		save := p.pos
		if r == '\\' {
			p.pos++
			if !p.peekIs('u') {
				p.pos = save
				return "", false
			}
			p.pos++
			var ok bool
			if r, ok = p.unicodeEscape(); !ok {
				p.pos = save
				return "", false
			}
		} else {
			p.pos += n
		}
		if len(name) == 0 && !isIDStart(r) || len(name) > 0 && !isIDContinue(r) {
			p.pos = save
			break
		}
		name = append(name, r)
	}
	return string(name), len(name) > 0
}

// atomEscape parses an escape outside a class.
func (p *parser) atomEscape() (*syntax.Regexp, bool, error) {
	start := p.pos
	p.pos++ // '\\'
	if !p.more() {
		return nil, false, p.errAt(start, start+1, "\\ at the end of the pattern")
	}
	switch c := p.src[p.pos]; c {
	case 'b':
		p.pos++
		return p.node(syntax.OpWordBoundary), true, nil
	case 'B':
		p.pos++
		return p.node(syntax.OpNoWordBoundary), true, nil
	case 'k':
		p.pos++
		if p.peekIs('<') {
			p.pos++
			if name, ok := p.identifier(); ok && p.peekIs('>') {
				p.pos++
				p.refs = append(p.refs, backRef{start: start, end: p.pos, name: name})
				return p.deferNotRegular(start, p.pos, "the named back-reference"), false, nil
			}
		}
		return nil, false, p.errAt(start, max(p.pos, start+2), "invalid named reference (write \\k<name>)")
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n int
		n, p.pos = p.decimal(p.pos)
		p.refs = append(p.refs, backRef{start: start, end: p.pos, number: n})
		return p.deferNotRegular(start, p.pos, "the back-reference"), false, nil
	case '-':
		return nil, false, p.errAt(start, start+2, "invalid escape (\\- is allowed only inside a class under the u flag)")
	}
	ranges, r, err := p.escape(false)
	if err != nil {
		return nil, false, err
	}
	if ranges != nil {
		if !p.takeRanges(len(ranges) / 2) {
			return nil, false, p.overRanges(start)
		}
		return p.charClass(ranges), false, nil
	}
	return p.literal(r), false, nil
}

// emptySet is the ranges of a class escape that matches nothing, such as
// \P{Any}: empty, but not nil, which would mean a character.
var emptySet = make([]rune, 0)

// escape parses the escape after a backslash that means a character or a
// class, the same inside and outside a class but for \b (inClass:
// backspace). It returns either ranges (a class, possibly empty but never
// nil) or one character.
func (p *parser) escape(inClass bool) (ranges []rune, r rune, err error) {
	start := p.pos - 1
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'd':
		return digitRanges, 0, nil
	case 'D':
		return notDigitRanges, 0, nil
	case 'w':
		return wordRanges, 0, nil
	case 'W':
		return notWordRanges, 0, nil
	case 's':
		return spaceRanges, 0, nil
	case 'S':
		return notSpaceRanges, 0, nil
	case 'p', 'P':
		if !p.peekIs('{') {
			return nil, 0, p.errAt(start, p.pos, "invalid property name (write \\"+string(c)+"{Name} or \\"+string(c)+"{Name=Value})")
		}
		end := p.pos
		for end < len(p.src) && p.src[end] != '}' {
			end++
		}
		if end == len(p.src) {
			return nil, 0, p.errAt(start, end, "invalid property name: no closing '}'")
		}
		body := p.src[p.pos+1 : end]
		p.pos = end + 1
		set, reason := property(body)
		if set == nil {
			return nil, 0, p.errAt(start, p.pos, reason)
		}
		if c == 'P' {
			set = cached("P"+body, func() []rune { return append(emptySet, negate(set)...) })
		}
		return set, 0, nil
	case 'f':
		return nil, '\f', nil
	case 'n':
		return nil, '\n', nil
	case 'r':
		return nil, '\r', nil
	case 't':
		return nil, '\t', nil
	case 'v':
		return nil, '\v', nil
	case 'c':
		if p.more() && isASCIILetter(p.src[p.pos]) {
			p.pos++
			return nil, rune(p.src[p.pos-1] % 32), nil
		}
		return nil, 0, p.errAt(start, start+2, "invalid unicode escape: \\c must be followed by an ASCII letter")
	case '0':
		if p.more() && '0' <= p.src[p.pos] && p.src[p.pos] <= '9' {
			return nil, 0, p.errAt(start, p.pos+1, "invalid decimal escape (no octal escapes under the u flag)")
		}
		return nil, 0, nil
	case 'x':
		if p.pos+2 <= len(p.src) && isHex(p.src[p.pos]) && isHex(p.src[p.pos+1]) {
			p.pos += 2
			return nil, hexValue(p.src[p.pos-2 : p.pos]), nil
		}
		return nil, 0, p.errAt(start, p.hexRun(start+2, 2), "invalid escape: \\x must be followed by two hex digits")
	case 'u':
		r, ok := p.unicodeEscape()
		if !ok {
			end := p.hexRun(start+2, 4)
			if p.peekIs('{') {
				end = p.hexRun(start+3, len(p.src))
				if end < len(p.src) && p.src[end] == '}' {
					end++
				}
			}
			return nil, 0, p.errAt(start, end, "invalid unicode escape: write \\uXXXX or \\u{X…} up to 10FFFF")
		}
		return nil, r, nil
	case 'b':
		if inClass {
			return nil, '\b', nil
		}
	case '-':
		if inClass {
			return nil, '-', nil
		}
	case '^', '$', '\\', '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '/':
		return nil, rune(c), nil
	}
	p.pos = start + 1
	_, n := utf8.DecodeRuneInString(p.src[p.pos:])
	return nil, 0, p.errAt(start, p.pos+n, "invalid escape (under the u flag only syntax characters and / may be escaped; there is no \\A, \\z, \\Q…\\E or \\h)")
}

// decimal reads the run of decimal digits at src[at], saturating at
// 2^31-1 as V8 reads a quantifier's bounds and a back-reference's number,
// and returns it with where the run ends (at, when there is none).
func (p *parser) decimal(at int) (n, end int) {
	for end = at; end < len(p.src) && '0' <= p.src[end] && p.src[end] <= '9'; end++ {
		n = min(n*10+int(p.src[end]-'0'), math.MaxInt32)
	}
	return n, end
}

// hexRun returns where a run of at most n hex digits from src[at] ends.
func (p *parser) hexRun(at, n int) int {
	end := at
	for end < len(p.src) && end-at < n && isHex(p.src[end]) {
		end++
	}
	return end
}

// unicodeEscape parses what follows \u: XXXX (a surrogate pair written as
// two escapes is one character) or {X…}; p.pos is after the 'u'.
func (p *parser) unicodeEscape() (rune, bool) {
	if p.peekIs('{') {
		i := p.pos + 1
		v := 0
		for i < len(p.src) && isHex(p.src[i]) {
			v = min(v*16+int(hexValue(p.src[i:i+1])), 0x110000)
			i++
		}
		if i == p.pos+1 || i >= len(p.src) || p.src[i] != '}' || v > utf8.MaxRune {
			return 0, false
		}
		p.pos = i + 1
		return rune(v), true
	}
	hex4 := func(at int) (rune, bool) {
		if at+4 > len(p.src) {
			return 0, false
		}
		for i := at; i < at+4; i++ {
			if !isHex(p.src[i]) {
				return 0, false
			}
		}
		return hexValue(p.src[at : at+4]), true
	}
	r, ok := hex4(p.pos)
	if !ok {
		return 0, false
	}
	p.pos += 4
	if 0xD800 <= r && r <= 0xDBFF && p.lookingAt(`\u`) {
		if lo, ok := hex4(p.pos + 2); ok && 0xDC00 <= lo && lo <= 0xDFFF {
			p.pos += 6
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, true
		}
	}
	return r, true
}

// class parses [...] or [^...].
func (p *parser) class() (*syntax.Regexp, error) {
	start := p.pos
	p.pos++ // '['
	neg := false
	if p.peekIs('^') {
		neg = true
		p.pos++
	}
	spans := p.spans[:0]
	defer func() { p.spans = spans[:0] }()
	for {
		if !p.more() {
			return nil, p.errAt(start, start+1, "unterminated character class")
		}
		if p.peekIs(']') {
			p.pos++
			break
		}
		atomStart := p.pos
		set, lo, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			set2, hi, err := p.classAtom()
			if err != nil {
				return nil, err
			}
			if set != nil || set2 != nil {
				return nil, p.errAt(atomStart, p.pos, "invalid character class: a range cannot start or end with a class escape under the u flag")
			}
			if hi < lo {
				return nil, p.errAt(atomStart, p.pos, "range out of order in character class")
			}
			if !p.takeRanges(1) {
				return nil, p.overRanges(start)
			}
			spans = append(spans, span{lo, hi})
			continue
		}
		if set != nil {
			if !p.takeRanges(len(set) / 2) {
				return nil, p.overRanges(start)
			}
			for i := 0; i+1 < len(set); i += 2 {
				spans = append(spans, span{set[i], set[i+1]})
			}
			continue
		}
		if !p.takeRanges(1) {
			return nil, p.overRanges(start)
		}
		spans = append(spans, span{lo, lo})
	}
	merged := merge(spans)
	at := len(p.ranges)
	if neg {
		p.ranges = appendNegated(p.ranges, merged)
	} else {
		for _, s := range merged {
			p.ranges = append(p.ranges, s.lo, s.hi)
		}
	}
	return p.charClass(p.ranges[at:len(p.ranges):len(p.ranges)]), nil
}

// classAtom parses one character or class escape inside [...].
func (p *parser) classAtom() (set []rune, r rune, err error) {
	if c := p.src[p.pos]; c != '\\' {
		if c < utf8.RuneSelf {
			p.pos++
			return nil, rune(c), nil
		}
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return nil, r, nil
	}
	start := p.pos
	p.pos++
	if !p.more() {
		return nil, 0, p.errAt(start, start+1, "\\ at the end of the pattern")
	}
	switch c := p.src[p.pos]; {
	case c == 'B':
		return nil, 0, p.errAt(start, start+2, "invalid class escape: \\B means nothing inside a class")
	case c == 'k':
		return nil, 0, p.errAt(start, start+2, "invalid class escape: no back-references inside a class")
	case '1' <= c && c <= '9':
		return nil, 0, p.errAt(start, start+2, "invalid class escape: no decimal escapes inside a class under the u flag")
	}
	return p.escape(true)
}

func (p *parser) literal(r rune) *syntax.Regexp {
	re := p.node(syntax.OpLiteral)
	re.Rune0[0] = r
	re.Rune = re.Rune0[:1]
	return re
}

// charClass is a class of sorted, merged range pairs; an empty one never
// matches.
func (p *parser) charClass(ranges []rune) *syntax.Regexp {
	if len(ranges) == 0 {
		return p.node(syntax.OpNoMatch)
	}
	re := p.node(syntax.OpCharClass)
	re.Rune = ranges
	return re
}

func isASCIILetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

func isHex(b byte) bool { return '0' <= b && b <= '9' || 'a' <= b|0x20 && b|0x20 <= 'f' }

// hexValue is the value of hex digits, all checked by isHex.
func hexValue(s string) rune {
	v := rune(0)
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b <= '9':
			v = v*16 + rune(b-'0')
		default:
			v = v*16 + rune(b|0x20-'a'+10)
		}
	}
	return v
}
