package pattern

//go:generate go run ./gen

import (
	"strings"
	"sync"
)

// generalCategories maps every General_Category value name and alias
// ECMA-262 accepts to the two-letter categories of categoryTables it
// unites.
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
		}
		if rs, ok := scripts[value]; ok {
			return rs, ""
		}
		return nil, "invalid property name: " + quoteName(value) + " is not a Script value known to Unicode " + generatedUnicodeVersion
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

// categoryRanges unites the tables of the two-letter categories cats.
func categoryRanges(cats []string) []rune {
	if len(cats) == 1 {
		return categoryTables[cats[0]]
	}
	var s []span
	for _, c := range cats {
		rs := categoryTables[c]
		for i := 0; i+1 < len(rs); i += 2 {
			s = append(s, span{rs[i], rs[i+1]})
		}
	}
	return spanRunes(merge(s))
}

func spanRunes(s []span) []rune {
	rs := make([]rune, 0, 2*len(s))
	for _, x := range s {
		rs = append(rs, x.lo, x.hi)
	}
	return rs
}
