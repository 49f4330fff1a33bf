package pattern

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// needNode skips the test, or fails it when CI=true, when node is not
// installed.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed; CI must have it for the comparisons with V8")
		}
		t.Skip("node is not installed: skipping the comparison with V8")
	}
}

// node runs testdata/v8.mjs over cases and returns its answers, or skips
// the test (fails it when CI=true) when node is not installed.
func node(t *testing.T, cases []v8Case) []v8Answer {
	t.Helper()
	needNode(t)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	enc.SetEscapeHTML(false)
	for _, c := range cases {
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
	}
	if path := os.Getenv("V8_DUMP"); path != "" { // to run node by hand
		os.WriteFile(path, in.Bytes(), 0o644)
	}
	cmd := exec.Command("node", "testdata/v8.mjs")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var answers []v8Answer
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var a v8Answer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("node answer %q: %v", sc.Text(), err)
		}
		answers = append(answers, a)
	}
	if len(answers) != len(cases) {
		t.Fatalf("node answered %d of %d patterns", len(answers), len(cases))
	}
	return answers
}

type v8Case struct {
	P  string   `json:"p"`
	In []string `json:"in"`
}

type v8Answer struct {
	OK  bool   `json:"ok"`
	Err string `json:"err"`
	M   []bool `json:"m"`
}

// edgeInputs are added to every pattern's own inputs: every line
// terminator, every \s code point, astral characters, case-folding pairs
// and word-boundary neighbours.
var edgeInputs = []string{
	"", "a", "A", "_", "0", "9", "z", "é", "É", "ß", "ẞ", "σ", "ς", "Σ", "k", "K", "\u212a", "ſ", "s",
	"\n", "\r", "\u2028", "\u2029", "\r\n", "a\nb", "\t", "\v", "\f", " ", "\u00a0", "\u1680", "\u2000",
	"\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a", "\u202f", "\u205f", "\u3000", "\ufeff", "\u180e", "\u200b", "😀", "𝒜", "a😀b",
	"\U0010ffff", "\x00", "\b", "-", "]", "\\", "/", "{", "}", "(", ")", "^", "$", ".", "*", "αβγ", "Ω", "ω",
	"\u0660", "٣", "foo bar", "foo_bar", "a-b", "xyz", "abc123", "\u0300", "Ⅻ", "中文", "ab", "aa", "ba",
	// Characters Unicode 16 and 17 added or moved, where an older table
	// would differ from V8: Latin and Cyrillic additions, CJK extensions,
	// Garay, and letters and marks whose category changed.
	"\u1c89", "\ua7cb", "\u088f", "\U0002ebf0", "\U000323b0", "\U00010d40", "\u0295", "\U0001171e",
}

// TestAgreesWithV8 compares Compile and MatchString with node's
// RegExp(p, "u") over a generated corpus: random patterns built from every
// construct the dialect has, each with inputs drawn from the pattern
// itself plus the edge inputs; and patterns V8 rejects, each of which must
// be rejected. There must be no disagreement at all.
func TestAgreesWithV8(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the V8 differential test")
	}
	r := rand.New(rand.NewPCG(15, 2026))
	var cases []v8Case
	seen := map[string]bool{}
	add := func(p string, in []string) {
		if seen[p] {
			return
		}
		seen[p] = true
		cases = append(cases, v8Case{p, append(in, edgeInputs...)})
	}
	for _, p := range handPicked {
		add(p, nil)
	}
	for _, c := range prefixPicked {
		add(c.P, c.In)
	}
	for _, p := range v8Rejects {
		add(p, nil)
	}
	for _, p := range notRegular {
		add(p, nil)
	}
	for len(cases) < 2500 {
		g := gen{r: r}
		n := g.disjunction(3)
		var in []string
		for range 12 {
			in = append(in, n.sample(r))
		}
		for range 4 {
			in = append(in, mutate(r, n.sample(r)))
		}
		add(n.src, in)
	}
	answers := node(t, cases)
	bad, accepted, rejected := 0, 0, 0
	for i, c := range cases {
		a := answers[i]
		p, _, err := Compile(c.P, 1<<16)
		if slices.Contains(notRegular, c.P) {
			if e, ok := err.(*Error); !a.OK || !ok || !e.Unsupported {
				bad++
				t.Errorf("pattern %q: V8 ok=%v (%s); ours %v, want a refusal as not regular", c.P, a.OK, a.Err, err)
			}
			continue
		}
		if a.OK != (err == nil) {
			bad++
			if bad < 40 {
				t.Errorf("pattern %q: V8 ok=%v (%s), ours err=%v", c.P, a.OK, a.Err, err)
			}
			continue
		}
		if !a.OK {
			rejected++
			continue
		}
		accepted++
		for j, s := range c.In {
			// MatchString uses the Pike VM or the DFA depending on what the
			// pattern has matched before; both must agree with V8.
			dfa, _, _ := newDFA(p).match(s, math.MaxInt)
			for engine, got := range map[string]bool{"MatchString": p.MatchString(s), "Pike VM": p.pikeMatch(s), "DFA": dfa} {
				if got != a.M[j] {
					bad++
					if bad < 40 {
						t.Errorf("pattern %q on %q: %s %v, V8 %v", c.P, s, engine, got, a.M[j])
					}
				}
			}
		}
	}
	t.Logf("%d patterns (%d accepted by V8, %d rejected), %d disagreements", len(cases), accepted, rejected, bad)
	if bad > 0 {
		t.Fatalf("%d disagreements with V8", bad)
	}
}

// handPicked are patterns worth pinning whatever the generator draws.
var handPicked = []string{
	`^[\u0000-\u007F]*$`, `\u0041`, `^\u{1F600}$`, `^\cJ$`, `^[\b]$`, `^[^]$`, `^\p{Script=Greek}+$`, `^\s$`, `^.$`,
	`^[]$`, `[]`, `[^]`, `^\ud83d\ude00$`, `^[\ud83d\ude00]$`, `^[😀-😂]$`, `\x41`, `^\0$`, `[\0]`, `\u{0}`,
	`^\p{L}+$`, `^\P{L}+$`, `\p{Lu}`, `\p{gc=Lu}`, `\p{General_Category=Uppercase_Letter}`, `\p{sc=Grek}`,
	`\p{scx=Grek}`, `\p{Script_Extensions=Greek}`, `^\p{scx=Deva}$`, `\p{Any}`, `\p{ASCII}`, `\p{Assigned}`,
	`\p{Alphabetic}`, `\p{White_Space}`, `\p{Emoji}`, `\p{Cn}`, `\p{C}`, `\p{LC}`, `\p{sc=Zyyy}`, `\p{sc=Unknown}`,
	`\bfoo\b`, `\Bo\B`, `^\b$`, `^\B$`, `\b`, `\B`, `a\b`, `é\b`, `\bé`, `(?<year>\d{4})-(?<m>\d\d)`,
	`a{2,3}?`, `a+?b`, `x*?$`, `(?:ab)+`, `a|b|`, `|`, `()`, `(|a)+`, `[-a]`, `[a-]`, `[\w-]`, `[a-b-c]`,
	`[--0]`, `[\--/]`, `^\/$`, `\.`, `[.]`, `[\]]`, `[\[]`, `[^\s\S]`, `[\s\S]`, `^[^\n]*$`, `a{0}`,
	`a{1}`, `a{0,0}`, `^a{3,}$`, `(a?){5}a{5}`, `\d\D\w\W\s\S`, `[\d\s]+`, `^[\u2028\u2029]$`, `\p{Nd}`,
	`(?<$>a)`, `(?<_a1>a)`, `(?<\u0061>a)`, `(?<é>x)`, `\u{10FFFF}`, `\u{000041}`, `[\u{1F600}-\u{1F64F}]`,
	`^.{2}$`, `^..$`, `\cA`, `[\cz]`, `\t\n\v\f\r`, `^\$`, `\^`, `\|`, `\{`, `\}`, `\(\)`, `\*\+\?`,
	`\ud83d`, `\ude00`, `[\ud800-\udfff]`, `^[^\ud83d]$`, `^[\ud83d\ude00]$`, `\ud83d\ude00|\ud800`, `^\S$`, `^\W$`,
	`\B\ud83d`, `^[\u{D800}-\u{DBFF}][\u{DC00}-\u{DFFF}]$`, `\u{D83D}\u{DE00}`, `^.\B.$`, `\B|a`, `(?:\B)+`,
	`^\p{Lowercase}+$`, `^\p{Uppercase}$`, `\p{ID_Start}\p{ID_Continue}*`, `\p{Extended_Pictographic}`,
	`\P{Any}`, `^\P{Any}*$`, `[\P{Any}]`, `[^\P{Any}]`, `a|\P{Any}`, `[\P{Any}a]`, `^\p{sc=Garay}+$`,
	`\p{scx=Gara}`, `^\p{Script=Tolong_Siki}$`, `\p{Lo}`, `\p{Ll}`, `^\p{Mc}$`, `^\p{Mn}$`, `^[^\p{L}\p{N}]$`,
}

// prefixPicked are patterns that start with a fixed sequence of ASCII sets
// (matched apart from the rest of the pattern, see fixedOf) or nearly do,
// with texts that reach past the prefix.
var prefixPicked = []v8Case{
	{`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$`, []string{
		"2026-11-18T10:17:13.276Z", "2026-11-18T10:17:13Z", "2026-11-18T10:17:13+01:00", "2026-11-18T10:17:13.Z",
		"2026-11-18T10:17:13", "2026-11-18T10:17:13Z\n", "2026-11-18t10:17:13Z", "2026-11-18T10:17:1Z", "٢026-11-18T10:17:13Z",
		"2026-11-18T10:17:13.2😀Z", "2026-11-18T10:17:13.276Zx"}},
	{`^abcd(?:é|e)+$`, []string{"abcde", "abcdé", "abcdeé", "abcd", "abcdée\n", "abcdf", "abce"}},
	{`^ab-_[a-z]*`, []string{"ab-_", "ab-_x😀", "ab-", "xab-_", "ab-_\u2028"}},
	{`^abcd\b`, []string{"abcd", "abcde", "abcd-", "abcd é"}},
	{`^abcd\B`, []string{"abcd", "abcde", "abcd-"}},
	{`^abcd(?:x|$)`, []string{"abcd", "abcdx", "abcdy", "abcd\n"}},
	{`^[0-9]{4}😀?$`, []string{"1234", "1234😀", "1234😀😀", "123😀"}},
	{`^abcd(?:^|x)`, []string{"abcd", "abcdx"}},
	{`^abcd.$`, []string{"abcd\n", "abcd\u2028", "abcd😀", "abcdx", "abcd"}},
	{`^abc[^a]`, []string{"abcé", "abca", "abc😀", "abc"}},
	{`^[A-Z]{3}-\d{4}|^x`, []string{"ABC-1234", "x", "ABC-123"}},
}

// v8Rejects are patterns V8 rejects under the u flag (or that are not
// regular); every one must be refused.
var v8Rejects = []string{
	`(?i)abc`, `\A`, `\z`, `\Z`, `[[:alpha:]]`, `\Qa.b\E`, `(?P<n>x)`, `\e`, `\h`, `\H`, `\R`, `\a`, `\i`,
	`a{`, `a{1`, `a{1,`, `a{,2}`, `{`, `}`, `]`, `a**`, `a*??`, `a+*`, `*a`, `+`, `?`, `^*`, `$+`, `\b*`,
	`(?=a)*`, `\1`, `\k<a>`, `\k`, `\c1`,
	`\c`, `[\c1]`, `\x4`, `\xg0`, `\u12`, `\u{110000}`, `\u{}`, `\u{12`, `[z-a]`, `[\d-z]`, `[a-\d]`, `\-`,
	`(?<a>x)(?<a>y)`, `\08`, `\00`, `\p{Foo}`, `\p{L=Lu}`, `\p{sc=Foo}`, `\p`, `\p{`, `\p{L`, `\P{}`,
	`\p{gc=Script}`, `\p{Letter=L}`, `(`, `)`, `a)`, `(a`, `[a`, `[`, `(?`, `(?:`, `(?<>a)`, `(?<1a>a)`,
	`(?<a`, `(?s).`, `(?m)^`, `(?x) a`, `\`, `a\`, `[\B]`, `[\1]`, `[\k]`, `\8`, `\9`, `\01`, `x{2}{3}`,
	`a{2,1}`, `(?#comment)`, `\p{Lowercase_Letter=Ll}`, `\p{ascii}`, `\p{l}`, `\p{ Lu}`, `[\p{L}-z]`,
	`\y`, `\/\ `, `\_`, `\ `, `\'`, `\"`, `\%`, `(?i:a)`, `(?-i:a)`,
	`[\P{Any}-a]`, `a{100001,100000}`, `a{2147483647,2147483646}`, `a{0002,01}`, `(a)\2`, `\10(a)`, `\k<`,
	`\k<b>(?<a>x)`, `(?<a>x)\k`, `(?<!a)+`, `(?=a)?`, `(?=a)(`, `(?<=a)[`, `\1(?=a)`,
}

// notRegular are patterns V8 accepts that are refused as not regular
// (lookaround, back-references), with Error.Unsupported set.
var notRegular = []string{`(?=a)`, `(?!a)`, `(?<=a)`, `(?<!a)`, `(a)\1`, `(?<a>x)\k<a>`, `^(?=.*\d)\w+$`, `(?<n>.)\k<n>`,
	`\k<a>(?<a>x)`, `\1(a)`, `(?=(a))\1`, `\10(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)`}

// gen draws random ECMA-262 patterns with a way to draw strings they may
// match.
type gen struct {
	r     *rand.Rand
	names int
}

// node is a generated piece: its source and a way to draw a string it
// matches (or nearly matches).
type pnode struct {
	src    string
	sample func(*rand.Rand) string
}

func (n pnode) sampleN(r *rand.Rand, k int) string {
	var b strings.Builder
	for range k {
		b.WriteString(n.sample(r))
	}
	return b.String()
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func fixed(src, s string) pnode { return pnode{src, func(*rand.Rand) string { return s }} }

func oneOf(src string, ss ...string) pnode {
	return pnode{src, func(r *rand.Rand) string { return pick(r, ss) }}
}

// atoms are single characters written every way the dialect allows.
var atoms = []pnode{
	fixed("a", "a"), fixed("b", "b"), fixed("Z", "Z"), fixed("7", "7"), fixed("_", "_"), fixed("é", "é"),
	fixed("ß", "ß"), fixed("σ", "σ"), fixed("K", "K"), fixed("\u212a", "\u212a"), fixed("😀", "😀"),
	fixed("𝒜", "𝒜"), fixed("中", "中"), fixed(" ", " "), fixed("-", "-"), fixed(",", ","), fixed("/", "/"),
	fixed(`\n`, "\n"), fixed(`\r`, "\r"), fixed(`\t`, "\t"), fixed(`\v`, "\v"), fixed(`\f`, "\f"),
	fixed(`\u2028`, "\u2028"), fixed(`\u2029`, "\u2029"), fixed(`\u00a0`, "\u00a0"), fixed(`\ufeff`, "\ufeff"),
	fixed(`\u0041`, "A"), fixed(`\u{1F600}`, "😀"), fixed(`\ud83d\ude00`, "😀"), fixed(`\u{61}`, "a"),
	fixed(`\x41`, "A"), fixed(`\x0a`, "\n"), fixed(`\cJ`, "\n"), fixed(`\cj`, "\n"), fixed(`\cM`, "\r"),
	fixed(`\0`, "\x00"), fixed(`\.`, "."), fixed(`\\`, `\`), fixed(`\/`, "/"), fixed(`\^`, "^"), fixed(`\$`, "$"),
	fixed(`\*`, "*"), fixed(`\(`, "("), fixed(`\]`, "]"), fixed(`\{`, "{"), fixed(`\|`, "|"),
	oneOf(".", "a", "é", "😀", "\n", "\r", "\u2028", "\u2029", " ", "\u0085"),
	oneOf(`\d`, "0", "5", "9", "٣", "a"), oneOf(`\D`, "a", "٣", "0", "\n"),
	oneOf(`\w`, "a", "Z", "_", "0", "é", "\u212a", "ſ"), oneOf(`\W`, "é", " ", "-", "a", "\u212a"),
	oneOf(`\s`, " ", "\t", "\v", "\f", "\n", "\r", "\u00a0", "\u1680", "\u2000", "\u2003", "\u200a", "\u2028",
		"\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "\u180e", "\u200b", "\u0085", "a"),
	oneOf(`\S`, "a", " ", "\u00a0", "\u180e", "\u0085"),
	oneOf(`\p{L}`, "a", "é", "中", "1", " "), oneOf(`\P{L}`, "a", "1", "😀"), oneOf(`\p{Lu}`, "A", "a", "É", "ǅ"),
	oneOf(`\p{Ll}`, "a", "A", "ß", "ǅ"), oneOf(`\p{Lt}`, "ǅ", "A"), oneOf(`\p{Nd}`, "1", "٣", "Ⅻ"),
	oneOf(`\p{N}`, "1", "Ⅻ", "½", "a"), oneOf(`\p{Zs}`, " ", "\u3000", "\t"), oneOf(`\p{P}`, ".", "-", "a"),
	oneOf(`\p{S}`, "$", "+", "😀", "a"), oneOf(`\p{Cc}`, "\x00", "\n", "a"), oneOf(`\p{Cf}`, "\ufeff", "\u200b", "a"),
	oneOf(`\p{Script=Greek}`, "α", "Ω", "a", "\u0342"), oneOf(`\p{sc=Grek}`, "α", "a"),
	oneOf(`\p{scx=Grek}`, "α", "\u0342", "a"), oneOf(`\p{Script_Extensions=Latin}`, "a", "\u0363", "α"),
	oneOf(`\p{sc=Latn}`, "a", "\u0363", "α"), oneOf(`\p{sc=Han}`, "中", "。", "a"),
	oneOf(`\p{scx=Hani}`, "中", "。", "a"), oneOf(`\p{sc=Zyyy}`, " ", "1", "a"), oneOf(`\p{sc=Cyrillic}`, "ж", "a"),
	oneOf(`\p{scx=Arab}`, "ب", "،", "a"), oneOf(`\p{Script_Extensions=Devanagari}`, "क", "\u0964", "a"),
	oneOf(`\P{sc=Latin}`, "a", "α"), oneOf(`\P{scx=Greek}`, "a", "α"), oneOf(`\p{Any}`, "a", "😀"),
	oneOf(`\p{ASCII}`, "a", "é"), oneOf(`\p{Alphabetic}`, "a", "1", "\u0345"), oneOf(`\p{White_Space}`, " ", "\u0085", "\ufeff"),
	oneOf(`\p{Emoji}`, "😀", "1", "a"), oneOf(`\p{Uppercase}`, "A", "Ⅻ", "a"), oneOf(`\p{Lowercase}`, "a", "ª", "A"),
	oneOf(`\p{Hex_Digit}`, "a", "g", "Ａ"), oneOf(`\p{Cn}`, "\u0378", "a"), oneOf(`\p{LC}`, "a", "ǅ", "ʰ"),
	oneOf(`\p{General_Category=Decimal_Number}`, "1", "a"), oneOf(`\p{gc=Lo}`, "中", "a"),
	oneOf(`\p{Math}`, "+", "a", "∑"), oneOf(`\p{Dash}`, "-", "a", "—"),
	// Unicode 16 and 17: new letters, a moved one, a new script; and a
	// property that holds nothing.
	oneOf(`\p{L}`, "\u1c89", "\U0002ebf0", "\u088f"), oneOf(`\p{Ll}`, "\u0295", "a"), oneOf(`\p{Lo}`, "\u0295", "\U000323b0"),
	oneOf(`\p{sc=Garay}`, "\U00010d40", "a"), oneOf(`\p{scx=Tutg}`, "\U00011380", "a"), oneOf(`\P{Any}`, "a", "\x00"),
}

// classItems are the pieces of a [...] class.
var classItems = []pnode{
	oneOf("a-z", "a", "m", "z", "A"), oneOf("A-Z", "A", "Z", "a"), oneOf("0-9", "0", "9", "a"),
	fixed("_", "_"), fixed("-", "-"), oneOf("é-ë", "é", "ê", "ì"), oneOf(`\u0000-\u007F`, "a", "\x00", "é"),
	oneOf(`\d`, "5", "a"), oneOf(`\w`, "a", "_", "é"), oneOf(`\s`, " ", "\u00a0", "\u2028", "a"),
	oneOf(`\S`, "a", " "), oneOf(`\W`, "-", "a"), oneOf(`\D`, "a", "1"), fixed(`\b`, "\b"), fixed(`\-`, "-"),
	fixed(`\]`, "]"), fixed(`\\`, `\`), fixed(`[`, "["), fixed(`^`, "^"), fixed(`.`, "."), fixed(`$`, "$"),
	oneOf(`\p{L}`, "a", "中", "1"), oneOf(`\P{L}`, "1", "a"), oneOf(`\p{Nd}`, "٣", "a"),
	oneOf(`\p{sc=Greek}`, "α", "a"), oneOf(`\p{scx=Grek}`, "\u0342", "a"), fixed(`\n`, "\n"),
	fixed(`\u2028`, "\u2028"), oneOf(`😀-😂`, "😀", "😁", "😃"), oneOf(`\u{1F600}-\u{1F64F}`, "😀", "🙏"),
	oneOf(`\ud83d\ude00-\ud83d\ude4f`, "😀", "🙏", "🚀"), fixed(`\cJ`, "\n"), fixed(`\x20`, " "), fixed(`\0`, "\x00"),
	oneOf("\u212a", "\u212a", "k"), oneOf("ſ", "ſ", "s"), fixed("😀", "😀"), fixed(`\/`, "/"), fixed(`\.`, "."),
	oneOf(`\t-\r`, "\t", "\v", "\r", " "),
}

func (g *gen) class() pnode {
	var src strings.Builder
	src.WriteByte('[')
	neg := g.r.IntN(4) == 0
	if neg {
		src.WriteByte('^')
	}
	var items []pnode
	for range g.r.IntN(4) {
		it := pick(g.r, classItems)
		if src.Len() == 1 && !neg && it.src == "^" {
			continue
		}
		items = append(items, it)
		src.WriteString(it.src)
	}
	src.WriteByte(']')
	return pnode{src.String(), func(r *rand.Rand) string {
		if len(items) == 0 || neg {
			return pick(r, []string{"a", "-", "é", "😀", "\n", " ", "5", "]"})
		}
		return pick(r, items).sample(r)
	}}
}

func (g *gen) atom(depth int) pnode {
	switch k := g.r.IntN(20); {
	case k < 10 || depth <= 0:
		return pick(g.r, atoms)
	case k < 14:
		return g.class()
	case k < 17:
		inner := g.disjunction(depth - 1)
		return pnode{"(" + inner.src + ")", inner.sample}
	case k < 19:
		inner := g.disjunction(depth - 1)
		return pnode{"(?:" + inner.src + ")", inner.sample}
	default:
		inner := g.disjunction(depth - 1)
		g.names++
		return pnode{fmt.Sprintf("(?<n%d>", g.names) + inner.src + ")", inner.sample}
	}
}

func (g *gen) term(depth int) pnode {
	if g.r.IntN(10) == 0 {
		return pick(g.r, []pnode{fixed("^", ""), fixed("$", ""), fixed(`\b`, ""), fixed(`\B`, "")})
	}
	a := g.atom(depth)
	if g.r.IntN(3) != 0 {
		return a
	}
	lazy := ""
	if g.r.IntN(4) == 0 {
		lazy = "?"
	}
	lo, hi := g.r.IntN(3), -1
	var q string
	kind := g.r.IntN(6)
	if strings.HasPrefix(a.src, "(") && a.src != "(" {
		// Nested unbounded quantifiers make V8 backtrack for minutes on
		// some inputs; groups take bounded ones.
		kind = []int{2, 3, 5}[g.r.IntN(3)]
	}
	switch kind {
	case 0:
		q = "*"
	case 1:
		q, lo = "+", 1
	case 2:
		q, hi = "?", 1
		lo = 0
	case 3:
		q, hi = fmt.Sprintf("{%d}", lo), lo
	case 4:
		q = fmt.Sprintf("{%d,}", lo)
	default:
		hi = lo + g.r.IntN(3)
		q = fmt.Sprintf("{%d,%d}", lo, hi)
	}
	return pnode{a.src + q + lazy, func(r *rand.Rand) string {
		n := lo
		if hi == -1 {
			n += r.IntN(3)
		} else if hi > lo {
			n += r.IntN(hi - lo + 1)
		}
		return a.sampleN(r, n)
	}}
}

func (g *gen) alternative(depth int) pnode {
	var terms []pnode
	for range 1 + g.r.IntN(4) {
		terms = append(terms, g.term(depth))
	}
	var src strings.Builder
	for _, t := range terms {
		src.WriteString(t.src)
	}
	return pnode{src.String(), func(r *rand.Rand) string {
		var b strings.Builder
		for _, t := range terms {
			b.WriteString(t.sample(r))
		}
		return b.String()
	}}
}

func (g *gen) disjunction(depth int) pnode {
	alts := []pnode{g.alternative(depth)}
	for g.r.IntN(4) == 0 {
		alts = append(alts, g.alternative(depth))
	}
	srcs := make([]string, len(alts))
	for i, a := range alts {
		srcs[i] = a.src
	}
	return pnode{strings.Join(srcs, "|"), func(r *rand.Rand) string { return pick(r, alts).sample(r) }}
}

// mutate changes a drawn string a little: a prefix, a suffix, a cut, or a
// character swapped for an edge one.
func mutate(r *rand.Rand, s string) string {
	edge := pick(r, edgeInputs)
	rs := []rune(s)
	switch r.IntN(4) {
	case 0:
		return edge + s
	case 1:
		return s + edge
	case 2:
		if len(rs) > 0 {
			return string(rs[:r.IntN(len(rs))])
		}
	default:
		if len(rs) > 0 {
			i := r.IntN(len(rs))
			return string(rs[:i]) + edge + string(rs[i+1:])
		}
	}
	return s + edge
}
