package strictjson

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// tapeNode is a node of a parsed document as tests compare it: offsets
// relative to the value's start, escaped strings by their text rather
// than by their index in doc.esc.
type tapeNode struct {
	start, end, next, meta uint32
	text                   string
}

// subtape returns the nodes of v's subtree relative to v.
func subtape(v Value) []tapeNode {
	var out []tapeNode
	first := v.n()
	for i := v.i; i < first.next; i++ {
		n := v.d.nodes[i]
		tn := tapeNode{start: n.start - first.start, end: n.end - first.start, next: n.next - v.i, meta: n.meta}
		if Kind(n.meta&kindMask) == String && n.meta&flagEscape != 0 {
			tn.meta &= 1<<countShift - 1
			tn.text = Value{v.d, i}.Str()
		}
		out = append(out, tn)
	}
	return out
}

// TestParsePredictedNames: an object in an array is parsed predicting the
// names of the object before it. Whatever the two objects, the second
// must parse as it does alone: same nodes and flags, same error at the
// same place, whether the prediction holds, fails at some name, runs out
// or comes from an object that was itself predicted.
func TestParsePredictedNames(t *testing.T) {
	var big, bigDup, bigMore strings.Builder
	for i := range 20 {
		fmt.Fprintf(&big, `,"k%02d":%d`, 19-i, i) // out of order from the second name
	}
	bigDup.WriteString(big.String()[:strings.Index(big.String(), `,"k02"`)] + `,"k10":0`)
	bigMore.WriteString(big.String() + `,"k20":0,"k19":1`)
	objects := []string{
		`{}`, `{"a":1}`, `{"a":1,"b":2}`, `{"a":1,"b":2,"c":3}`, `{"a":1,"b":2,"a":3}`,
		`{"b":1,"a":2}`, `{"b":1,"a":2,"c":3}`, `{"b":1,"a":2,"b":3}`, `{"a":1,"a":2}`,
		`{"ab":"x"}`, `{"ab" :"x"}`, `{ "ab":"x"}`, `{"abc":1}`, `{"a":1,"ab":2}`,
		`{"a\u0062":1}`, `{"ab\u0063":1}`, `{"\u00e9":1}`, `{"é":1,"\u00e9":2}`, `{"é":1,"é":2}`,
		`{"a":1,"b":{"a":1,"b":2}}`, `{"a":[{"a":1},{"a":2}],"b":1}`, `{"a":{"a":{}},"b":[]}`,
		`{"a":1,"b":}`, `{"a":1,"b":2`, `{"a":1,"b":2,}`, `{"a":1 "b":2}`, `{"a":1,"b"`, `{"a":1,"b":"\x01"}`,
		"{" + big.String()[1:] + "}", "{" + bigDup.String()[1:] + "}", "{" + bigMore.String()[1:] + "}",
	}
	for _, o2 := range objects {
		alone, aloneErr := Parse([]byte(o2), Limits{})
		for _, o1 := range objects {
			if _, err := Parse([]byte(o1), Limits{}); err != nil {
				continue
			}
			for _, items := range [][]string{{o1, o2}, {o1, o1, o2}, {o1, "1", o2}} {
				doc := "[" + strings.Join(items, ",") + "]"
				at := len(doc) - len(o2) - 1
				got, err := Parse([]byte(doc), Limits{})
				if aloneErr != nil {
					var want, perr *Error
					errors.As(aloneErr, &want)
					if !errors.As(err, &perr) || perr.Kind != want.Kind || perr.Offset != want.Offset+at ||
						perr.Pointer != fmt.Sprintf("/%d%s", len(items)-1, want.Pointer) ||
						perr.Msg != want.Msg && want.Offset < len(o2) { // alone, the input ends where "]" follows
						t.Errorf("Parse(%s) = %v, want %v at %d", doc, err, aloneErr, want.Offset+at)
					}
					continue
				}
				if err != nil {
					t.Errorf("Parse(%s): %v", doc, err)
					continue
				}
				it := got.Iter()
				var prev Value
				for it.Next() && it.Index() < len(items)-1 {
					prev = it.Value()
				}
				item := subtape(it.Value())
				if len(item) > 0 {
					item[0].meta &^= flagRepeat // alone, it has no item before it
				}
				if diff := cmp.Diff(subtape(alone), item, cmp.AllowUnexported(tapeNode{})); diff != "" {
					t.Errorf("Parse(%s): last item differs from Parse(%s) (-alone +item):\n%s", doc, o2, diff)
				}
				if got, want := it.Value().RepeatsNames(), repeatsNames(prev, it.Value()); got != want {
					t.Errorf("Parse(%s): last item's RepeatsNames() = %v, want %v", doc, got, want)
				}
			}
		}
	}
}

// repeatsNames reports whether the objects prev and v have the same
// member names in the same order, written alike, none with an escape: the
// items the parser marks as repeating names.
func repeatsNames(prev, v Value) bool {
	if prev.Kind() != Object || v.Kind() != Object || prev.Len() != v.Len() || v.Len() == 0 {
		return false
	}
	a, b := prev.Iter(), v.Iter()
	for a.Next() && b.Next() {
		na, nb := prev.d.nodes[a.keyNode()], v.d.nodes[b.keyNode()]
		ta, tb := prev.d.src[na.start:na.end], v.d.src[nb.start:nb.end]
		if ta != tb || strings.Contains(ta, `\`) {
			return false
		}
	}
	return true
}

// TestRepeatName checks the compare of a predicted member name against a
// string compare for every size around the one- and two-word cases, with
// a difference at every byte and just past the end, and with the name at
// every distance from the end of the input.
func TestRepeatName(t *testing.T) {
	for size := 2; size <= 20; size++ {
		for diff := -1; diff <= size; diff++ { // -1: none; size: just past the end
			for tail := 0; tail <= 20; tail++ {
				a := strings.Repeat("x", size+1)
				b := []byte(a)
				if diff >= 0 {
					b[diff] = 'y'
				}
				after := string(b) + strings.Repeat(" ", tail)
				data := []byte("[" + a + "," + after[:size+tail]) // tail bytes after the second text
				at := 1 + len(a) + 1
				p := &parser{src: string(data), data: data, pos: at}
				p.tape = []node{{start: 1, end: uint32(1 + size), meta: uint32(String) | flagVerbatim}}
				want := string(data[1:1+size]) == string(data[at:at+size])
				if got := p.repeatName(0); got != want {
					t.Errorf("repeatName at %d of %q, size %d = %v, want %v", at, data, size, got, want)
				}
				if want && (p.pos != at+size || len(p.tape) != 2 || p.tape[1] != (node{start: uint32(at), end: uint32(at + size), next: 2, meta: p.tape[0].meta})) {
					t.Errorf("repeatName at %d of %q, size %d: pos %d, tape %v", at, data, size, p.pos, p.tape)
				}
			}
		}
	}
}

// TestNumberVerbatimMark checks the mark the parser gives numbers, from the
// parts it found while scanning, against a reading of the whole text.
func TestNumberVerbatimMark(t *testing.T) {
	// verbatimText is the rule of verbatimNumber on the text alone.
	verbatimText := func(s string) bool {
		body := strings.TrimPrefix(s, "-")
		if strings.ContainsAny(body, "eE") {
			return false
		}
		intPart, frac, found := strings.Cut(body, ".")
		if !found {
			if body == "0" {
				return s == "0"
			}
			return len(body) <= maxVerbatimDigits
		}
		if strings.HasSuffix(frac, "0") {
			return false
		}
		if intPart == "0" {
			zeros := len(frac) - len(strings.TrimLeft(frac, "0"))
			return zeros <= 5 && len(frac)-zeros <= maxVerbatimDigits
		}
		return len(intPart)+len(frac) <= maxVerbatimDigits
	}
	for _, sign := range []string{"", "-"} {
		for _, intPart := range []string{"0", "1", "10", "123456789012345", "1234567890123456"} {
			for _, frac := range []string{"", ".0", ".5", ".50", ".05", ".000001", ".0000001", ".000005", ".0000005", ".12345678901234", ".123456789012345", ".1234567890123456"} {
				for _, exp := range []string{"", "e5", "E-2", "e+0"} {
					text := sign + intPart + frac + exp
					v, err := Parse([]byte(text), Limits{})
					if err != nil {
						t.Fatalf("Parse(%q): %v", text, err)
					}
					if got, want := v.n().meta&flagVerbatim != 0, verbatimText(text); got != want {
						t.Errorf("Parse(%q) marked verbatim %v, want %v", text, got, want)
					}
				}
			}
		}
	}
}
