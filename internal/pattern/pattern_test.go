package pattern

import (
	"math"
	"regexp"
	"strings"
	"testing"
)

// cases are ECMA-262 patterns whose answers the DFA and the Pike VM must
// agree on; those in the dialect RE2 shares are also checked against Go's
// regexp.
var cases = []struct{ pattern string }{
	{`^a`}, {`a$`}, {`^$`}, {``}, {`abc`}, {`^[A-Z]{3}-[0-9]{4}$`}, {`^[^@\s]+@[^@\s]+\.[a-z]{2,}$`},
	{`^(pd|pw|pm|py)$`}, {`\bfoo\b`}, {`\Bfoo`}, {`^\p{Script=Greek}+$`}, {`.`}, {`[^]x`}, {`a.c`}, {`^.*$`},
	{`x*`}, {`(a|ab)(c|bcd)(d*)`}, {`\$[0-9]+(\.[0-9]{2})?`}, {`é+`}, {`💩{2}`}, {`^(?:(a+)|b)*c$`},
	{`^\w+$`}, {`[^\n]`}, {`a+?`}, {`a{0}b`}, {`^(\d{1,3}\.){3}\d{1,3}$`}, {`^(a|b[^x]){2,5}c`},
	{`(x(y|)z?){0,3}$`}, {`^é{2,}`}, {`^(\d|[^\d\s]){3}$`}, {`[^\u{0}-\u{10FFFF}]{2}|c`}, {`\B`}, {`^\s+$`},
	{`^[A-Za-z0-9+/]*={0,2}$`}, {`\p{L}\P{L}`},
	// Fixed sequences of ASCII sets (the fixedSeq fast path) and near misses.
	{`^[0-9a-f]{4}-[0-9a-f]{2}$`}, {`^evt_[A-Za-z0-9]{4}`}, {`^\d{4}-\d{2}$`}, {`^(?:ab)c$`}, {`^[]a`},
	{`^\x7f$`}, {`^[^a]$`}, {`^[\0-\x7f]{2}$`}, {`^a$|^b$`}, {`^\s$`}, {`^^a$$`}, {`a$`},
	// Word tests of one, two, three and four terms, the last word
	// overlapping the one before.
	{`^\d{4}-\d{2}-\d{2}$`}, {`^[0-9a-f]{8}-[0-9a-f]{4}$`}, {`^[A-Za-z0-9]{9}$`}, {`^[a-cx-z0-1_]{10}`},
	// Fixed prefixes matched apart from the rest, and near misses.
	{`^\d{4}-\d{2}(?:Z|[+-]\d{2})$`}, {`^abcd(?:é|e)+$`}, {`^(ab)(cd)x*`}, {`^abcd\b`}, {`^abcd.$`},
}

var inputs = []string{
	"", "a", "b", "ab", "abc", "xabcx", "ABC-1234", "ab-1234", "user@example.com", "bad address@x",
	"pd", "pdx", "a foo b", "afoo", "STRASSE", "straße", "kelvin", "Kelvin", "αβγ", "αβγ1", "x\ny", "\n",
	"a\nb\n", "abcd", "aaac", "ac", "cc", "héé", "💩💩", "💩", "$12.50", "$5", "12.0.0.1", "1.2.3.4",
	"under_score", "sp ace", "abd", "\x00", "a\u00e9", "ab\nc", "\u2028", "\r", " \u00a0\ufeff", "QUJD+/==",
	"09af-1b", "09af-1b\n", "09aF-1b", "09af-1b2", "evt_aB3z", "evt_aB3zé", "evt_é3z", "2026-11", "2026-1",
	"abc", "\x7f", "\x7f\x7f", "é", "\x00\x7f", " ", "2026-11Z", "2026-11+01", "2026-11+0", "2026-11Z\n",
	"abcde", "abcdé", "abcdeé", "abcd", "abcdx", "abcdxx", "abcd\n", "abcd😀", "abcd-", "abce",
	"2026-11-23", "2026-11-2x", "2026-11-23Z", "2026-11-2é", "0123abcd-ef01", "0123abcd-ef0g", "0123abcD-ef01",
	"0123abcd-ef0/", "aZ09bY18c", "aZ09bY18é", "aZ09bY18-", "aZ09bY18", "[Z09bY18c", "abcxyz01_a", "abcxyz01_ax",
	"abcxyz01_d", "abcxyz01`a", "abcxyz2_aa",
}

// TestFixedSequences checks which patterns take the fixedSeq fast path, so
// that the cases above test it where it is meant to apply.
func TestFixedSequences(t *testing.T) {
	for src, want := range map[string]bool{
		`^[0-9a-f]{4}-[0-9a-f]{2}$`: true, `^evt_[A-Za-z0-9]{4}`: true, `^\d{4}-\d{2}$`: true,
		`^(?:ab)c$`: true, `^\x7f$`: true, `^[\0-\x7f]{2}$`: true, `^^a$$`: true,
		`^(ab)c$`: true,  // a capture compiles to no-ops
		`^[^a]$`:  false, // the set holds non-ASCII characters
		`^[]a`:    false, // an empty class compiles to a failing instruction
		`^\s$`:    false, `a$`: false, `^a$|^b$`: false, `^a+$`: false, `^a?$`: false, `^.$`: false,
		`^a\b`: false, `^é$`: false, `^a$b`: false, `^[a-z]{1,3}$`: false,
	} {
		p, _, err := Compile(src, 1000)
		if err != nil || p == nil {
			t.Fatalf("Compile(%q) = %v, %v", src, p, err)
		}
		if got := p.fixed != nil; got != want {
			t.Errorf("%q: fast path %v, want %v", src, got, want)
		}
	}
}

// TestFixedPrefixes checks which patterns have their fixed prefix matched
// apart from the rest, and how long the prefix is.
func TestFixedPrefixes(t *testing.T) {
	for src, want := range map[string]int{
		`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$`: 19,
		`^abcd(?:é|e)+$`: 4, `^abcd(?:x|$)`: 4, `^[0-9]{4}😀?$`: 4, `^abcd.$`: 4, `^(ab)(cd)x*`: 4,
		`^abc[^a]`:     0, // too short to pay
		`^abcd\b`:      0, // \b would need the character before the rest
		`^abcd(?:^|x)`: 0, // so would ^
		`^abcd$x`:      0, `abcd.*`: 0, `^abcd`: 0, `^[A-Z]{3}-\d{4}|^x`: 0,
	} {
		p, _, err := Compile(src, 1000)
		if err != nil || p == nil {
			t.Fatalf("Compile(%q) = %v, %v", src, p, err)
		}
		got := 0
		if p.prefix != nil {
			got = p.prefix.seq.n
		}
		if got != want {
			t.Errorf("%q: prefix of %d sets, want %d", src, got, want)
		}
	}
}

func TestDFAAgreesWithPikeVM(t *testing.T) {
	for _, c := range cases {
		p, _, err := Compile(c.pattern, 1<<20)
		if err != nil || p == nil {
			t.Fatalf("Compile(%q) = %v, %v", c.pattern, p, err)
		}
		for _, in := range inputs {
			if got, want := p.MatchString(in), p.pikeMatch(in); got != want {
				t.Errorf("pattern %q on %q: DFA %v, Pike VM %v", c.pattern, in, got, want)
			}
		}
	}
}

// sharedDialect reports whether src uses only syntax that means the same
// in ECMA-262 (u flag) and RE2: ASCII literals, classes without class
// escapes other than \d and \w, groups, quantifiers, ^ $ \b \B, \d \w.
func sharedDialect(src string) bool {
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\':
			if i+1 >= len(src) || !strings.ContainsRune(`dDwWbB.*+?()[]{}|^$\`, rune(src[i+1])) {
				return false
			}
			i++
		case c == '.' || c == '(' && strings.HasPrefix(src[i:], "(?") && !strings.HasPrefix(src[i:], "(?:"):
			return false
		case c == '[' && (strings.HasPrefix(src[i:], "[]") || strings.HasPrefix(src[i:], "[^]")):
			// ECMA-262's empty class and any-character class; RE2 reads
			// a ']' first in a class as the character.
			return false
		case c >= 0x80 || c < ' ':
			return false
		case c == '{' || c == ',':
			// RE2 reads {0n} and {n,0m} as literal text; ECMA-262 as counts.
			if i+2 < len(src) && src[i+1] == '0' && '0' <= src[i+2] && src[i+2] <= '9' {
				return false
			}
		}
	}
	return true
}

func TestSharedDialectAgreesWithRegexp(t *testing.T) {
	n := 0
	for _, c := range cases {
		re, err := regexp.Compile(c.pattern)
		if err != nil || !sharedDialect(c.pattern) {
			continue
		}
		n++
		p, _, _ := Compile(c.pattern, 1<<20)
		for _, in := range inputs {
			if got, want := p.MatchString(in), re.MatchString(in); got != want {
				t.Errorf("pattern %q on %q: got %v, regexp says %v", c.pattern, in, got, want)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d cases in the shared dialect", n)
	}
}

// TestOverSizePiece checks which piece a pattern over the size limit is
// refused at: the repetition that multiplies a piece past the limit, the
// innermost one whose piece fits, or the term after which the pattern no
// longer fits. Offsets count code points.
func TestOverSizePiece(t *testing.T) {
	tests := []struct {
		src   string
		limit int
		piece string
		at    int
	}{
		{`a{99999}`, 3000, `a{99999}`, 0},
		{`^x(a{100}){100}$`, 3000, `(a{100}){100}`, 2},
		{`^(?:(?:ab){2000})$`, 3000, `(?:ab){2000}`, 4},
		{`(b|c{5000})`, 3000, `c{5000}`, 3},
		{`a{1000}b{1000}c{1000}d{100}`, 3000, `c{1000}`, 14},
		{`é{2000}x{2000}`, 3000, `x{2000}`, 7},
		{`[a-z]+\d{2998}`, 3000, `\d{2998}`, 6},
		{`abcdef`, 6, `e`, 4},
		{`(?<n>a{10}){10}`, 50, `(?<n>a{10}){10}`, 0},
		{`((((a{3000}))))`, 3000, `a{3000}`, 4},
		{`(?:a{2998}){2}`, 3000, `(?:a{2998}){2}`, 0},
		{`(?:a{2997}){2,}`, 3000, `(?:a{2997}){2,}`, 0},
		{`(?:a{2998}){2,}`, 3000, `a{2998}`, 3},
		{`a{2998}(?:bc){0}`, 3000, `(?:bc){0}`, 7},
		{`a{2998}(?:b{9}){0}`, 3000, `(?:b{9}){0}`, 7},
	}
	for _, tt := range tests {
		p, size, err := Compile(tt.src, tt.limit)
		pe, ok := err.(*Error)
		if p != nil || !ok || !pe.OverSize || size <= tt.limit {
			t.Errorf("Compile(%q, %d) = %v, %d, %v; want nil, a size over the limit and an OverSize error", tt.src, tt.limit, p, size, err)
			continue
		}
		if pe.Piece != tt.piece || pe.Offset != tt.at {
			t.Errorf("Compile(%q, %d) went over at %q at offset %d, want %q at offset %d", tt.src, tt.limit, pe.Piece, pe.Offset, tt.piece, tt.at)
		}
	}
}

func TestCompileLimits(t *testing.T) {
	if _, _, err := Compile(`(?=x)`, 1000); err == nil {
		t.Error("lookahead compiled")
	}
	p, size, err := Compile(`a{1000}b{1000}c{1000}d{100}`, 3000)
	if pe, ok := err.(*Error); p != nil || !ok || !pe.OverSize || size <= 3000 {
		t.Errorf("repetition bomb: got %v, size %d, %v; want nil, a size over the limit and an OverSize error", p, size, err)
	}
	if p, _, _ := Compile(`^x$`, 3000); p.String() != `^x$` {
		t.Errorf("String() = %q", p.String())
	}
	if p, size, err := Compile(`abc`, 4); p != nil || err == nil || size != 5 {
		t.Errorf("abc within 4: got %v, size %d, %v; want nil, size 5 and an error", p, size, err)
	}
	if p, size, _ := Compile(`abc`, 5); p == nil || size != 5 || !p.MatchString("xabc") {
		t.Errorf("abc within 5: got %v, size %d; want a pattern of size 5 that matches", p, size)
	}
}

// TestSizeEstimate checks that EstimateSize, which bounds a program before
// it is built, counts exactly the instructions the compiler emits.
func TestSizeEstimate(t *testing.T) {
	for _, src := range []string{
		`a`, `abc`, `^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$`, `(?:a?){1000}`, `\p{L}{1000}`, `a{2,5}`, `(a|b|c)*`,
		`x{3,}`, `(?:ab){0,10}c`, `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$`,
		`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`, `(?:(?:a{10}){10}){10}`, `.{0,1000}`, `a{0}`,
		`(?:)`, `a|b|`, `[]`, `\b(?<n>x+?)\B$`, `(?:a{2,}){0,3}`, `[^]*`, `x{1,1}`,
	} {
		tree, parsed, _, err := parseECMA(src, math.MaxInt)
		if err != nil {
			t.Fatal(err)
		}
		est := EstimateSize(tree, 1<<30) + 2
		parsed.release()
		p, size, err := Compile(src, 1<<20)
		if err != nil || p == nil || size != len(p.insts) || est != size {
			t.Errorf("%s: estimated %d instructions, compiled %d (%v)", src, est, size, err)
		}
	}
}

// FuzzMatch checks the DFA against the Pike VM on arbitrary patterns and
// inputs, and both against Go's regexp where the dialects agree.
func FuzzMatch(f *testing.F) {
	for _, c := range cases {
		for _, in := range inputs[:8] {
			f.Add(c.pattern, in)
		}
	}
	f.Fuzz(func(t *testing.T, pattern, in string) {
		p, _, err := Compile(pattern, 5000)
		if err != nil || p == nil {
			return
		}
		got, want := p.MatchString(in), p.pikeMatch(in)
		if got != want {
			t.Fatalf("pattern %q on %q: DFA %v, Pike VM %v", pattern, in, got, want)
		}
		// A State through its phases on the text again and again (the
		// Pike VM, then pikeSearch, then the DFA's run), answering and
		// counting as the matching first written does.
		q := general(p)
		var st State
		var ref stateRef
		for k := 0; k < 3*pikePromote && (st.dfa == nil || k%8 != 7); k++ {
			m0, w0, _ := ref.match(q, in, math.MaxInt)
			m1, w1, _ := q.MatchBudget(&st, in, math.MaxInt)
			if m1 != want || m0 != want || w1 != w0 {
				t.Fatalf("pattern %q on %q, match %d: State %v, %d; first written %v, %d; want %v", pattern, in, k, m1, w1, m0, w0, want)
			}
		}
		if re, err := regexp.Compile(pattern); err == nil && sharedDialect(pattern) {
			if want := re.MatchString(in); got != want {
				t.Fatalf("pattern %q on %q: got %v, regexp says %v", pattern, in, got, want)
			}
		}
	})
}

// TestPikeThenDFA checks when a pattern starts using its DFA: once the
// Pike VM has spent pikePromote units of work on it, or at once for a
// text longer than pikeMaxText, and that the Pike VM stops at the budget.
func TestPikeThenDFA(t *testing.T) {
	const src = `^(pd|pw|pm|py)+$`
	p, _, _ := Compile(src, 1000)
	short := strings.Repeat("pw", 8)
	_, work, _ := p.pikeBudget(short, math.MaxInt)
	if work <= len(short) {
		t.Fatalf("Pike VM work on %q = %d, want more than one unit per byte", short, work)
	}
	for i := 0; i < (pikePromote+work-1)/work; i++ {
		if !p.MatchString(short) || p.own.dfa != nil {
			t.Fatalf("match %d: DFA made %v, want the Pike VM until %d units", i, p.own.dfa != nil, pikePromote)
		}
	}
	if !p.MatchString(short) || p.own.dfa == nil {
		t.Fatalf("after %d units: DFA made %v, want true", pikePromote, p.own.dfa != nil)
	}
	q, _, _ := Compile(src, 1000)
	if long := strings.Repeat("pm", pikeMaxText); !q.MatchString(long) || q.own.dfa == nil {
		t.Fatalf("a %d-byte text: DFA made %v, want true", 2*pikeMaxText, q.own.dfa != nil)
	}
	for _, budget := range []int{0, 5, 16, work - 1, work} {
		r, _, _ := Compile(src, 1000)
		_, got, ok := r.pikeBudget(short, budget)
		if ok != (budget >= work) || ok && got != work {
			t.Errorf("Pike VM, budget %d: work %d, ok %v; want ok only from %d", budget, got, ok, work)
		}
	}
}
