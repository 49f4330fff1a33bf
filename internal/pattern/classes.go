package pattern

import (
	"slices"
	"unicode/utf8"
)

// span is one range of a class.
type span struct{ lo, hi rune }

// The class escapes as ECMA-262 defines them under the u flag (without i),
// and their complements, as sorted range pairs. \s is WhiteSpace (tab,
// vertical tab, form feed, space, no-break space, the byte order mark and
// every Zs character) plus the four LineTerminators; "." is every code
// point but those four terminators.
var (
	digitRanges = []rune{'0', '9'}
	wordRanges  = []rune{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
	spaceRanges = []rune{
		'\t', '\r', ' ', ' ', 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a,
		0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff,
	}
	dotRanges      = []rune{0, '\n' - 1, '\n' + 1, '\r' - 1, '\r' + 1, 0x2027, 0x202a, utf8.MaxRune}
	notDigitRanges = negate(digitRanges)
	notWordRanges  = negate(wordRanges)
	notSpaceRanges = negate(spaceRanges)
)

// merge sorts spans and joins the ones that overlap or touch, in place.
func merge(s []span) []span {
	slices.SortFunc(s, func(a, b span) int { return int(a.lo - b.lo) })
	n := 0
	for _, x := range s {
		if n > 0 && x.lo <= s[n-1].hi+1 {
			s[n-1].hi = max(s[n-1].hi, x.hi)
			continue
		}
		s[n] = x
		n++
	}
	return s[:n]
}

// appendNegated appends to dst the complement of sorted, merged spans
// within all code points, as range pairs.
func appendNegated(dst []rune, s []span) []rune {
	next := rune(0)
	for _, x := range s {
		if x.lo > next {
			dst = append(dst, next, x.lo-1)
		}
		next = x.hi + 1
	}
	if next <= utf8.MaxRune {
		dst = append(dst, next, utf8.MaxRune)
	}
	return dst
}

// negate returns the complement of sorted, merged range pairs.
func negate(r []rune) []rune {
	s := make([]span, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		s = append(s, span{r[i], r[i+1]})
	}
	return appendNegated(nil, s)
}

// isIDStart and isIDContinue are the characters RegExpIdentifierName
// allows in a group name: ID_Start and ID_Continue, plus '$', '_', ZWNJ
// and ZWJ.
func isIDStart(r rune) bool {
	return r == '$' || r == '_' || inClass(binaryProperties["ID_Start"], r)
}

func isIDContinue(r rune) bool {
	return r == '$' || r == 0x200c || r == 0x200d || inClass(binaryProperties["ID_Continue"], r)
}
