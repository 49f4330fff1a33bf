package preflight

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkPattern runs Check on a body that is the string in under a schema
// whose only keyword is pattern p.
func checkPattern(t *testing.T, p, in string) (*CheckResult, error) {
	t.Helper()
	pj, _ := json.Marshal(p)
	ij, _ := json.Marshal(in)
	req, err := DecodeCheckRequest([]byte(hostileCheck(string(ij), `{"pattern":`+string(pj)+`}`)))
	if err != nil {
		return nil, err
	}
	return Check(req)
}

// TestPatternDialect pins, through Check, the meaning of every construct
// of the pattern dialect (ECMA-262 with JavaScript's u flag) at its edges.
// The answers are what node's RegExp(p, "u").test(in) gives.
func TestPatternDialect(t *testing.T) {
	for _, c := range []struct {
		name, pattern, in string
		match             bool
	}{
		{"unanchored search", `b`, "abc", true},
		{"^ is the start of the text only", `^b`, "a\nb", false},
		{"$ is the end of the text only", `a$`, "a\nb", false},
		{"ASCII-only idiom", `^[\u0000-\u007F]*$`, "plain ascii", true},
		{"ASCII-only idiom refuses é", `^[\u0000-\u007F]*$`, "café", false},
		{`\uXXXX`, `^\u0041$`, "A", true},
		{`\u{…} astral`, `^\u{1F600}$`, "😀", true},
		{"surrogate pair escape is one character", `^\ud83d\ude00$`, "😀", true},
		{"astral literal is one character for .", `^.$`, "😀", true},
		{`\xXX`, `^\x41$`, "A", true},
		{`\cX`, `^\cJ$`, "\n", true},
		{`\0`, `^\0$`, "\x00", true},
		{`[\b] is backspace`, `^[\b]$`, "\b", true},
		{"[^] is any character", `^[^]$`, "\n", true},
		{"[] matches nothing", `[]`, "anything", false},
		{`\s matches U+00A0`, `^\s$`, "\u00a0", true},
		{`\s matches U+FEFF`, `^\s$`, "\ufeff", true},
		{`\s matches U+2003`, `^\s$`, "\u2003", true},
		{`\s matches U+2028`, `^\s$`, "\u2028", true},
		{`\s matches \v`, `^\s$`, "\v", true},
		{`\s does not match U+180E`, `^\s$`, "\u180e", false},
		{`\s does not match U+0085`, `^\s$`, "\u0085", false},
		{". excludes \\r", `^.$`, "\r", false},
		{". excludes U+2028", `^.$`, "\u2028", false},
		{". excludes U+2029", `^.$`, "\u2029", false},
		{". takes U+0085", `^.$`, "\u0085", true},
		{`\d is ASCII`, `^\d$`, "٣", false},
		{`\w is ASCII`, `^\w$`, "é", false},
		{`\w takes _`, `^\w+$`, "a_1", true},
		{`\b between word and non-word`, `a\b`, "a-", true},
		{`\b is ASCII: é is not a word character`, `\bé`, "é", false},
		{`\B between two non-word characters`, `^-\B-$`, "--", true},
		{`\p{L}`, `^\p{L}+$`, "Ωmega", true},
		{`\P{L}`, `^\P{L}$`, "1", true},
		{`\p{Lu}`, `^\p{Lu}$`, "É", true},
		{`\p{General_Category=Decimal_Number}`, `^\p{General_Category=Decimal_Number}$`, "٣", true},
		{`\p{Script=Greek}`, `^\p{Script=Greek}+$`, "αβγ", true},
		{`\p{sc=Grek} alias`, `^\p{sc=Grek}$`, "a", false},
		{`\p{scx=Grek} takes a combining mark Greek shares`, `^\p{scx=Grek}$`, "\u0342", true},
		{`\p{sc=Grek} does not`, `^\p{sc=Grek}$`, "\u0342", false},
		{`\p{Script_Extensions=Devanagari} takes the danda`, `^\p{Script_Extensions=Devanagari}$`, "\u0964", true},
		{`\p{Script=Devanagari} does not`, `^\p{Script=Devanagari}$`, "\u0964", false},
		{`\p{White_Space}`, `^\p{White_Space}$`, "\u0085", true},
		{`\p{Any}`, `^\p{Any}$`, "\U0010ffff", true},
		{`\P{Any} matches nothing, not U+0000`, `\P{Any}`, "\x00", false},
		{`[^\P{Any}] matches anything`, `^[^\P{Any}]$`, "\x00", true},
		{`\p{L} is Unicode 17's: U+1C89 (Latin, 16.0)`, `^\p{L}$`, "\u1c89", true},
		{`U+0295 became Lo in Unicode 16`, `^\p{Ll}$`, "\u0295", false},
		{`\p{sc=Garay} (Unicode 16)`, `^\p{sc=Garay}+$`, "\U00010d40", true},
		{`\p{sc=Unknown} no longer takes U+088F`, `^\p{sc=Unknown}$`, "\u088f", false},
		{"named group", `^(?<year>\d{4})-(?<month>\d\d)$`, "2026-11", true},
		{"non-capturing group", `^(?:ab)+$`, "abab", true},
		{"lazy quantifier answers as greedy", `^a+?$`, "aaa", true},
		{"{n,m}", `^a{2,3}$`, "aaaa", false},
		{"{n,}", `^a{2,}$`, "aaaa", true},
		{"{0}", `^a{0}b$`, "b", true},
		{"no case folding without i", `k`, "K", false},
		{"escaped syntax characters", `^\^\$\\\.\*\+\?\(\)\[\]\{\}\|\/$`, `^$\.*+?()[]{}|/`, true},
		{"class range of astral characters", `^[😀-😂]$`, "😁", true},
		{"dash at the end of a class", `^[\w-]+$`, "a-b", true},
	} {
		res, err := checkPattern(t, c.pattern, c.in)
		if err != nil {
			t.Errorf("%s: pattern %q: %v", c.name, c.pattern, err)
			continue
		}
		if res.Valid != c.match {
			t.Errorf("%s: pattern %q on %q: valid %v, want %v", c.name, c.pattern, c.in, res.Valid, c.match)
		}
	}
}

// TestPatternRefusals pins what is refused and what the message says:
// syntax V8 rejects under the u flag, and lookaround and back-references.
func TestPatternRefusals(t *testing.T) {
	for _, c := range []struct{ pattern, message string }{
		{`(?i)abc`, `invalid group (JavaScript has no inline flags such as (?i) and no (?P<name>…); use (?:…) or (?<name>…)): "(?i" at offset 0`},
		{`a\A`, `invalid escape (under the u flag only syntax characters and / may be escaped; there is no \A, \z, \Q…\E or \h): "\\A" at offset 1`},
		{`\z`, `invalid escape`},
		{`[[:alpha:]]`, `lone quantifier brackets (under the u flag write \] for the character): "]" at offset 10`},
		{`\Qa\E`, `invalid escape`},
		{`(?P<n>x)`, `invalid group`},
		{`\e`, `invalid escape (under the u flag only syntax characters and / may be escaped; there is no \A, \z, \Q…\E or \h): "\\e" at offset 0`},
		{`ab{`, `incomplete quantifier`},
		{strings.Repeat("(", 1000) + strings.Repeat(")", 1000), `the pattern is over a limit of this validator (JavaScript has none): groups are nested more than 999 deep: "(" at offset 999`},
		{`ab{1,`, `incomplete quantifier (under the u flag a '{' must start {n}, {n,} or {n,m}; write \{ for the character): "{1," at offset 2`},
		{`\u{110000}`, `invalid unicode escape: write \uXXXX or \u{X…} up to 10FFFF: "\\u{110000}" at offset 0`},
		{`\x4G`, `invalid escape: \x must be followed by two hex digits: "\\x4" at offset 0`},
		{`x**`, `nothing to repeat: "*" at offset 2`},
		{`[z-a]`, `range out of order in character class: "z-a" at offset 1`},
		{`\p{Foo}`, `invalid property name: "Foo" is not a General_Category value or a binary property ECMA-262 lists: "\\p{Foo}" at offset 0`},
		{`é(`, `unterminated group: "(" at offset 1`},
		{`(?=a)b`, `lookahead "(?=" at offset 0 is not supported: ` + notRegular},
		{`a(?<!b)`, `lookbehind "(?<!" at offset 1 is not supported: ` + notRegular},
		{`(a)\1`, `the back-reference "\\1" at offset 3 is not supported: ` + notRegular},
		{`(?<x>a)\k<x>`, `the named back-reference "\\k<x>" at offset 7 is not supported: ` + notRegular},
		{`\k<x>(?<x>a)`, `the named back-reference "\\k<x>" at offset 0 is not supported: ` + notRegular},
		{`\1`, `invalid escape: a back-reference \N needs at least N capturing groups, and the pattern has 0 (under the u flag there are no octal escapes): "\\1" at offset 0`},
		{`(a)\2`, `invalid escape: a back-reference \N needs at least N capturing groups, and the pattern has 1`},
		{`\k<y>(?<x>a)`, `invalid named reference: the pattern has no group of that name: "\\k<y>" at offset 0`},
		{`(?<x>a)\k`, `invalid named reference (write \k<name>): "\\k" at offset 7`},
		{`(?=a)*`, `nothing to repeat: an assertion cannot take a quantifier: "(?=a)*" at offset 0`},
		{`(?=a)[`, `unterminated character class: "[" at offset 5`},
		{`a{100001,100000}`, `numbers out of order in {} quantifier: "{100001,100000}" at offset 1`},
		{`[\P{Any}-a]`, `a range cannot start or end with a class escape`},
		{`\p{sc=Foo}`, `invalid property name: "Foo" is not a Script value known to Unicode 17.0: "\\p{sc=Foo}" at offset 0`},
		{`a{99999}`, `the pattern expands to more than 3000 instructions, the most allowed per pattern (the limit was reached at "a{99999}" at offset 0); use smaller repetition counts`},
		{`^é(x{10}){1000}$`, `(the limit was reached at "(x{10}){1000}" at offset 2)`},
		{`[0-9]{2000}-[a-f]{2000}`, `(the limit was reached at "[a-f]{2000}" at offset 12)`},
	} {
		_, err := checkPattern(t, c.pattern, "")
		e, ok := err.(*Error)
		if !ok || e.Code != ErrorUnsupportedPattern || len(e.Details) != 1 {
			t.Errorf("pattern %q: got %v, want unsupported_pattern", c.pattern, err)
			continue
		}
		if d := e.Details[0]; d.Path != "/schema/pattern" || !strings.Contains(d.Message, c.message) {
			t.Errorf("pattern %q: detail %s %q, want /schema/pattern containing %q", c.pattern, d.Path, d.Message, c.message)
		}
	}
}

// TestPatternSchemaSizeRefusal checks that the limit on the programs of
// all of a schema's patterns together names the pattern, and the piece of
// it, at which the total went over.
func TestPatternSchemaSizeRefusal(t *testing.T) {
	// x{2998} compiles to 3,000 instructions, x{2900} to 2,902: ten of
	// either fit the schema's 30,000, and the eleventh pattern is refused.
	tests := []struct{ name, fill, last, want string }{
		{"a piece past the limit", "x{2900}", "^x{2900}$",
			`the schema's patterns expand to more than 30000 instructions together (the limit was reached at "x{2900}" at offset 1 of this pattern); use fewer or smaller patterns`},
		{"no room left for an empty pattern", "x{2998}", "",
			`the schema's patterns expand to more than 30000 instructions together (the patterns before this one leave no room for it); use fewer or smaller patterns`},
		{"no room left for one character", "x{2998}", "y",
			`the schema's patterns expand to more than 30000 instructions together (the limit was reached at "y" at offset 0 of this pattern); use fewer or smaller patterns`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var props []string
			for i := range 10 {
				props = append(props, fmt.Sprintf(`"p%02d":{"pattern":%q}`, i, tt.fill))
			}
			props = append(props, fmt.Sprintf(`"p10":{"pattern":%q}`, tt.last))
			_, err := DecodeCheckRequest([]byte(hostileCheck(`{}`, `{"properties":{`+strings.Join(props, ",")+`}}`)))
			e, ok := err.(*Error)
			if !ok || e.Code != ErrorUnsupportedPattern || len(e.Details) != 1 {
				t.Fatalf("got %v, want one unsupported_pattern detail", err)
			}
			want := Issue{Path: "/schema/properties/p10/pattern", Code: IssueUnsupportedPattern, Message: tt.want}
			if diff := cmp.Diff(want, e.Details[0]); diff != "" {
				t.Errorf("detail (-want +got):\n%s", diff)
			}
		})
	}
}
