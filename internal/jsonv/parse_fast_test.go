package jsonv

import (
	"errors"
	"strings"
	"testing"
)

// TestParseStringEdges puts each byte at which the string scanner stops (a
// quote, an escape, a control character, valid and invalid UTF-8) at every
// offset of strings of every length up to three words, both at the very end
// of the input and inside an array: the scanner reads eight bytes at a time
// while eight remain and one at a time after that.
func TestParseStringEdges(t *testing.T) {
	type want struct {
		str    string    // decoded text, when the string is valid
		kind   ErrorKind // else the error
		offset int       // and where, in the string without the array
	}
	for n := 0; n <= 24; n++ {
		plain := strings.Repeat("a", n)
		cases := map[string]want{
			`"` + plain + `"`: {str: plain},
			`"` + plain:       {kind: ErrSyntax, offset: -1}, // at the end of input
		}
		for k := 0; k <= n; k++ {
			at := func(s string) string { return `"` + plain[:k] + s + plain[k:] + `"` }
			cases[at(`\n`)] = want{str: plain[:k] + "\n" + plain[k:]}
			cases[at("\u00e9")] = want{str: plain[:k] + "\u00e9" + plain[k:]}
			cases[at("\x01")] = want{kind: ErrSyntax, offset: k + 1}
			cases[at("\xff")] = want{kind: ErrInvalidUTF8, offset: k + 1}
			cases[at(`\"`)] = want{str: plain[:k] + `"` + plain[k:]}
		}
		for doc, w := range cases {
			for _, wrap := range []string{"", "["} {
				text := wrap + doc
				if wrap != "" {
					text += "]"
				}
				v, err := Parse([]byte(text), Limits{})
				if w.offset != 0 {
					offset := w.offset + len(wrap)
					if w.offset < 0 {
						offset = len(text)
					}
					var perr *Error
					if !errors.As(err, &perr) || perr.Kind != w.kind || perr.Offset != offset {
						t.Errorf("Parse(%q) = %v, want error kind %d at %d", text, err, w.kind, offset)
					}
					continue
				}
				if err != nil {
					t.Errorf("Parse(%q): %v", text, err)
					continue
				}
				if wrap != "" {
					it := v.Iter()
					it.Next()
					v = it.Value()
				}
				if v.Str() != w.str || v.Start() != len(wrap) || v.End() != len(wrap)+len(doc) {
					t.Errorf("Parse(%q) = %q at %d-%d, want %q at %d-%d", text, v.Str(), v.Start(), v.End(), w.str, len(wrap), len(wrap)+len(doc))
				}
			}
		}
	}
}
