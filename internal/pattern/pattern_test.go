package pattern

import (
	"regexp"
	"testing"
)

// The reference for every answer is Go's own regexp package.
var cases = []struct{ pattern string }{
	{`^a`}, {`a$`}, {`^$`}, {``}, {`abc`}, {`^[A-Z]{3}-[0-9]{4}$`}, {`^[^@\s]+@[^@\s]+\.[a-z]{2,}$`},
	{`^(pd|pw|pm|py)$`}, {`\bfoo\b`}, {`\Bfoo`}, {`(?i)straße`}, {`(?i)^K`}, {`^\p{Greek}+$`},
	{`.`}, {`(?s).x`}, {`a.c`}, {`^.*$`}, {`(?m)^b$`}, {`\Aa`}, {`a\z`}, {`x*`}, {`(a|ab)(c|bcd)(d*)`},
	{`[[:alpha:]]+\d`}, {`\$[0-9]+(\.[0-9]{2})?`}, {`é+`}, {`💩{2}`}, {`^(?:(a+)|b)*c$`},
	{`^\w+$`}, {`[^\n]`}, {`(?U)a+`}, {`a{0}b`}, {`^(\d{1,3}\.){3}\d{1,3}$`},
	{`^(a|b[^x]){2,5}c`}, {`(x(y|)z?){0,3}$`}, {`^é{2,}`}, {`^(\d|[^\d\s]){3}$`}, {`[^\x00-\x{10FFFF}]{2}|c`},
}

var inputs = []string{
	"", "a", "b", "ab", "abc", "xabcx", "ABC-1234", "ab-1234", "user@example.com", "bad address@x",
	"pd", "pdx", "a foo b", "afoo", "STRASSE", "straße", "kelvin", "Kelvin", "αβγ", "αβγ1", "x\ny", "\n",
	"a\nb\n", "abcd", "aaac", "ac", "cc", "héé", "💩💩", "💩", "$12.50", "$5", "12.0.0.1", "1.2.3.4",
	"under_score", "sp ace", "abd", "\x00", "a\u00e9", "ab\nc",
}

func TestMatchAgreesWithRegexp(t *testing.T) {
	for _, c := range foldSeeds {
		p, _, err := Compile(c.pattern, 1<<20)
		if err != nil || p == nil {
			t.Fatalf("Compile(%q) = %v, %v", c.pattern, p, err)
		}
		if got, want := p.MatchString(c.in), regexp.MustCompile(c.pattern).MatchString(c.in); got != want {
			t.Errorf("pattern %q on %q: got %v, regexp says %v", c.pattern, c.in, got, want)
		}
	}
	for _, c := range cases {
		p, _, err := Compile(c.pattern, 1<<20)
		if err != nil || p == nil {
			t.Fatalf("Compile(%q) = %v, %v", c.pattern, p, err)
		}
		re := regexp.MustCompile(c.pattern)
		for _, in := range inputs {
			if got, want := p.MatchString(in), re.MatchString(in); got != want {
				t.Errorf("pattern %q on %q: got %v, regexp says %v", c.pattern, in, got, want)
			}
		}
	}
}

func TestCompileLimits(t *testing.T) {
	if _, _, err := Compile(`(?=x)`, 1000); err == nil {
		t.Error("lookahead compiled; RE2 has none")
	}
	p, size, err := Compile(`a{1000}b{1000}c{1000}d{100}`, 3000)
	if p != nil || err != nil || size <= 3000 {
		t.Errorf("repetition bomb: got %v, size %d, %v; want nil and a size over the limit", p, size, err)
	}
	if p, _, _ := Compile(`^x$`, 3000); p.String() != `^x$` {
		t.Errorf("String() = %q", p.String())
	}
	// abc is five instructions with the fail and match ones; one fewer
	// must not leave a program that cannot match.
	if p, size, err := Compile(`abc`, 4); p != nil || err != nil || size != 5 {
		t.Errorf("abc within 4: got %v, size %d, %v; want nil and size 5", p, size, err)
	}
	if p, size, _ := Compile(`abc`, 5); p == nil || size != 5 || !p.MatchString("xabc") {
		t.Errorf("abc within 5: got %v, size %d; want a pattern of size 5 that matches", p, size)
	}
}

// foldSeeds start FuzzMatch on what the compact program must get right:
// case folding, Unicode classes, negation, anchors, word boundaries and
// non-ASCII literals.
var foldSeeds = []struct{ pattern, in string }{
	{`(?i)k`, "\u212a"}, {`(?i)K+`, "xkK\u212a"}, {`(?i)σ`, "ς"}, {`(?i)ǅ`, "ǆ"}, {`(?i)[a-zé]+$`, "ÉTÉ"},
	{`\pL+`, "ünï"}, {`\PL`, "a1"}, {`[^\pL\d]`, "a1_"}, {`[\p{Lu}\d]{2}`, "Ä5"}, {`[^a-z]`, "abcé"},
	{`^[^a-z]+$`, "ABC"}, {`(?m)^é$`, "x\né\n"}, {`\bé`, "é"}, {`\Bx\b`, "ax"}, {`^\b$`, ""},
	{`ü{2,3}`, "üüü"}, {`[ä-ö]`, "ë"}, {`(?s)(?i)ß.`, "ẞ\n"}, {`(?i)[^k]`, "\u212a"}, {`\A(?i:ſ)\z`, "S"},
}

// FuzzMatch checks the matcher against regexp on arbitrary patterns and
// inputs.
func FuzzMatch(f *testing.F) {
	for _, c := range cases {
		for _, in := range inputs[:8] {
			f.Add(c.pattern, in)
		}
	}
	for _, c := range foldSeeds {
		f.Add(c.pattern, c.in)
	}
	f.Fuzz(func(t *testing.T, pattern, in string) {
		re, err := regexp.Compile(pattern)
		p, _, perr := Compile(pattern, 5000)
		if (err == nil) != (perr == nil) {
			t.Fatalf("pattern %q: regexp error %v, ours %v", pattern, err, perr)
		}
		if err != nil || p == nil {
			return
		}
		if got, want := p.MatchString(in), re.MatchString(in); got != want {
			t.Fatalf("pattern %q on %q: got %v, regexp says %v", pattern, in, got, want)
		}
	})
}

func BenchmarkCompile(b *testing.B) {
	for _, src := range []string{`^[^@\s]+@[^@\s]+\.[a-z]{2,}$`, `^(pd|pw|pm|py)$`, `^cus_[a-zA-Z0-9]{8,}$`,
		`^[A-Z]{3}-[0-9]{4}$`, `^[0-9A-Z -]{3,10}$`, `^[A-Za-z0-9-]+$`} {
		b.Run("pattern/"+src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compile(src, 3000)
			}
		})
		b.Run("regexp/"+src, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				regexp.Compile(src)
			}
		})
	}
}

// TestDirectPathTaken makes sure the common schema patterns are compiled
// without regexp/syntax, and that everything else falls back to it.
func TestDirectPathTaken(t *testing.T) {
	for _, src := range []string{`^[A-Z]{3}-[0-9]{4}$`, `^[^@\s]+@[^@\s]+\.[a-z]{2,}$`, `^(pd|pw|pm|py)$`,
		`^cus_[a-zA-Z0-9]{8,}$`, `^[0-9A-Z -]{3,10}$`, `^[A-Za-z0-9-]+$`, `a|`, `(?:ab)*c?`, `\$\d+(\.\d\d)?`} {
		if _, _, ok := compileDirect(src, 3000); !ok {
			t.Errorf("%q fell back to regexp/syntax", src)
		}
	}
	for _, src := range []string{`(?i)a`, `\p{Greek}`, `[[:alpha:]]`, `\bx`, `a*?`, `a**`, `x{2}{3}`, `(a{2}){3}`, `[]a]`, `\Q.\E`, `x{1001}`, `(`, `a)`, `[z-a]`, `\1`} {
		if _, _, ok := compileDirect(src, 3000); ok {
			t.Errorf("%q was compiled directly; it should fall back", src)
		}
	}
}

func BenchmarkMatchString(b *testing.B) {
	for _, c := range []struct{ pattern, in string }{
		{`^[^@\s]+@[^@\s]+\.[a-z]{2,}$`, "someone.else@example.com"},
		{`^(pd|pw|pm|py)$`, "pm"},
		{`^cus_[a-zA-Z0-9]{8,}$`, "cus_9s8d7f6g5h4j"},
		{`\d{3}-\d{4}`, "call 555-0123 after noon"},
	} {
		p, _, err := Compile(c.pattern, 3000)
		if err != nil || p == nil {
			b.Fatalf("Compile(%q) = %v, %v", c.pattern, p, err)
		}
		b.Run(c.pattern, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.MatchString(c.in)
			}
		})
	}
}
