package pattern

//go:generate go run ./gen

import (
	"strings"
	"sync"
	"unicode"
)

// generalCategories maps every General_Category value name and alias
// ECMA-262 accepts to the two-letter categories of Go's unicode tables
// it unites ("Cn", unassigned, is derived: Go has no table for it).
var generalCategories = map[string][]string{}

func init() {
	for _, g := range [][2]string{
		{"C Other", "Cc Cf Cn Co Cs"}, {"LC Cased_Letter", "Lu Ll Lt"}, {"L Letter", "Lu Ll Lt Lm Lo"},
		{"M Mark Combining_Mark", "Mc Me Mn"}, {"N Number", "Nd Nl No"},
		{"P Punctuation punct", "Pc Pd Pe Pf Pi Po Ps"}, {"S Symbol", "Sc Sk Sm So"}, {"Z Separator", "Zl Zp Zs"},
		{"Cc Control cntrl", "Cc"}, {"Cf Format", "Cf"}, {"Cn Unassigned", "Cn"}, {"Co Private_Use", "Co"},
		{"Cs Surrogate", "Cs"}, {"Ll Lowercase_Letter", "Ll"}, {"Lm Modifier_Letter", "Lm"},
		{"Lo Other_Letter", "Lo"}, {"Lt Titlecase_Letter", "Lt"}, {"Lu Uppercase_Letter", "Lu"},
		{"Mc Spacing_Mark", "Mc"}, {"Me Enclosing_Mark", "Me"}, {"Mn Nonspacing_Mark", "Mn"},
		{"Nd Decimal_Number digit", "Nd"}, {"Nl Letter_Number", "Nl"}, {"No Other_Number", "No"},
		{"Pc Connector_Punctuation", "Pc"}, {"Pd Dash_Punctuation", "Pd"}, {"Pe Close_Punctuation", "Pe"},
		{"Pf Final_Punctuation", "Pf"}, {"Pi Initial_Punctuation", "Pi"}, {"Po Other_Punctuation", "Po"},
		{"Ps Open_Punctuation", "Ps"}, {"Sc Currency_Symbol", "Sc"}, {"Sk Modifier_Symbol", "Sk"},
		{"Sm Math_Symbol", "Sm"}, {"So Other_Symbol", "So"}, {"Zl Line_Separator", "Zl"},
		{"Zp Paragraph_Separator", "Zp"}, {"Zs Space_Separator", "Zs"},
	} {
		cats := strings.Fields(g[1])
		for _, n := range strings.Fields(g[0]) {
			generalCategories[n] = cats
		}
	}
}

// propertySets caches the ranges of each property already built, by its
// canonical name.
var propertySets sync.Map

// property returns the ranges of \p{body}, or nil and why not.
func property(body string) ([]rune, string) {
	name, value, hasValue := strings.Cut(body, "=")
	if !hasValue {
		if cats, ok := generalCategories[name]; ok {
			return cached("gc="+name, func() []rune { return categoryRanges(cats) }), ""
		}
		if long, ok := binaryAliases[name]; ok {
			name = long
		}
		if rs, ok := binaryProperties[name]; ok {
			return rs, ""
		}
		return nil, "invalid property name: " + quoteName(name) + " is not a General_Category value or a binary property ECMA-262 lists"
	}
	switch name {
	case "General_Category", "gc":
		if cats, ok := generalCategories[value]; ok {
			return cached("gc="+value, func() []rune { return categoryRanges(cats) }), ""
		}
		return nil, "invalid property name: " + quoteName(value) + " is not a General_Category value"
	case "Script", "sc", "Script_Extensions", "scx":
		if long, ok := scriptAliases[value]; ok {
			value = long
		}
		if name == "Script_Extensions" || name == "scx" {
			if rs, ok := scriptExtensions[value]; ok {
				return rs, ""
			}
		} else if _, ok := unicode.Scripts[value]; ok || value == "Unknown" {
			return cached("sc="+value, func() []rune { return scriptRanges(value) }), ""
		}
		return nil, "invalid property name: " + quoteName(value) + " is not a Script value known to Unicode " + unicode.Version
	}
	return nil, "invalid property name: " + quoteName(name) + " (only General_Category, Script and Script_Extensions take a value)"
}

func quoteName(s string) string { return "\"" + s + "\"" }

func cached(key string, build func() []rune) []rune {
	if v, ok := propertySets.Load(key); ok {
		return v.([]rune)
	}
	v, _ := propertySets.LoadOrStore(key, build())
	return v.([]rune)
}

// categoryRanges unites Go's tables of the two-letter categories cats.
func categoryRanges(cats []string) []rune {
	var s []span
	for _, c := range cats {
		if t, ok := unicode.Categories[c]; ok {
			s = appendTable(s, t)
			continue
		}
		if c == "Cn" { // older Go versions have no table for it
			var assigned []span
			for name, t := range unicode.Categories {
				if len(name) == 2 {
					assigned = appendTable(assigned, t)
				}
			}
			rs := appendNegated(nil, merge(assigned))
			for i := 0; i < len(rs); i += 2 {
				s = append(s, span{rs[i], rs[i+1]})
			}
		}
	}
	return spanRunes(merge(s))
}

// scriptRanges returns the ranges of a Script value; Unknown is every
// code point no script claims.
func scriptRanges(name string) []rune {
	if name != "Unknown" {
		return spanRunes(merge(appendTable(nil, unicode.Scripts[name])))
	}
	var s []span
	for _, t := range unicode.Scripts {
		s = appendTable(s, t)
	}
	return appendNegated(nil, merge(s))
}

// appendTable appends the ranges of t, strides expanded.
func appendTable(s []span, t *unicode.RangeTable) []span {
	for _, r := range t.R16 {
		s = appendStrided(s, rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	for _, r := range t.R32 {
		s = appendStrided(s, rune(r.Lo), rune(r.Hi), rune(r.Stride))
	}
	return s
}

func appendStrided(s []span, lo, hi, stride rune) []span {
	if stride == 1 {
		return append(s, span{lo, hi})
	}
	for r := lo; r <= hi; r += stride {
		s = append(s, span{r, r})
	}
	return s
}

func spanRunes(s []span) []rune {
	rs := make([]rune, 0, 2*len(s))
	for _, x := range s {
		rs = append(rs, x.lo, x.hi)
	}
	return rs
}
