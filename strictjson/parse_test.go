package strictjson

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want tree
	}{
		{name: "null", doc: "null", want: tree{Kind: Null, End: 4}},
		{name: "true", doc: "true", want: tree{Kind: Bool, Bool: true, End: 4}},
		{name: "false with white space", doc: " \t\r\nfalse ", want: tree{Kind: Bool, Start: 4, End: 9}},
		{name: "number text kept verbatim", doc: "-1.50E+3", want: tree{Kind: Number, Str: "-1.50E+3", End: 8}},
		{name: "negative zero kept", doc: "-0", want: tree{Kind: Number, Str: "-0", End: 2}},
		{name: "huge number text kept", doc: "1e400", want: tree{Kind: Number, Str: "1e400", End: 5}},
		{name: "plain string", doc: `"abc"`, want: tree{Kind: String, Str: "abc", End: 5}},
		{
			name: "every escape",
			doc:  `"\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac"`,
			want: tree{Kind: String, Str: "\"\\/\b\f\n\r\tA\u00e9\u20ac", End: 36},
		},
		{name: "surrogate pair", doc: `"\ud83d\ude00"`, want: tree{Kind: String, Str: "\U0001F600", End: 14}},
		{name: "upper-case hex escape", doc: `"\uD83D\uDE00"`, want: tree{Kind: String, Str: "\U0001F600", End: 14}},
		{name: "escaped NUL", doc: `"\u0000"`, want: tree{Kind: String, Str: "\x00", End: 8}},
		{name: "raw UTF-8 and DEL", doc: "\"\u00e9\U0001F600\x7f\"", want: tree{Kind: String, Str: "\u00e9\U0001F600\x7f", End: 9}},
		{name: "empty array", doc: "[ ]", want: tree{Kind: Array, Items: []tree{}, End: 3}},
		{name: "empty object", doc: "{ }", want: tree{Kind: Object, Members: []treeMember{}, End: 3}},
		{
			name: "nested, members in document order",
			doc:  `{"b": [1, "x"], "a": {}}`,
			want: tree{Kind: Object, End: 24, Members: []treeMember{
				{Key: "b", Value: tree{Kind: Array, Start: 6, End: 14, Items: []tree{
					{Kind: Number, Str: "1", Start: 7, End: 8},
					{Kind: String, Str: "x", Start: 10, End: 13},
				}}},
				{Key: "a", Value: tree{Kind: Object, Members: []treeMember{}, Start: 21, End: 23}},
			}},
		},
		{
			name: "same name in different objects is no duplicate",
			doc:  `[{"a":1},{"a":2}]`,
			want: tree{Kind: Array, End: 17, Items: []tree{
				{Kind: Object, Start: 1, End: 8, Members: []treeMember{{Key: "a", Value: tree{Kind: Number, Str: "1", Start: 6, End: 7}}}},
				{Kind: Object, Start: 9, End: 16, Members: []treeMember{{Key: "a", Value: tree{Kind: Number, Str: "2", Start: 14, End: 15}}}},
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.doc), Limits{})
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.doc, err)
			}
			if diff := cmp.Diff(tc.want, toTree(got)); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.doc, diff)
			}
		})
	}
}

// nest returns a document nested depth levels deep: depth-1 arrays around
// a 1 (every value counts as a level, the scalar too).
func nest(depth int) string {
	return strings.Repeat("[", depth-1) + "1" + strings.Repeat("]", depth-1)
}

// bigObject returns an object with n members "k00", "k01", ... followed by
// the extra member names given, each with the value 0.
func bigObject(n int, extra ...string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%02d":0`, i)
	}
	for _, k := range extra {
		fmt.Fprintf(&b, `,"%s":0`, k)
	}
	b.WriteString("}")
	return b.String()
}

func TestParseLimitsAccept(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		lim  Limits
	}{
		{name: "depth exactly at the limit", doc: nest(3), lim: Limits{MaxDepth: 3}},
		{name: "nodes exactly at the limit", doc: `[1,2,3]`, lim: Limits{MaxNodes: 4}},
		{name: "object keys are not nodes", doc: `{"a":1,"b":2}`, lim: Limits{MaxNodes: 3}},
		{name: "10000 levels with no limit given", doc: nest(10000)},
		{name: "large object without duplicates", doc: bigObject(40)},
		{name: "negative limits mean no limit", doc: nest(50), lim: Limits{MaxDepth: -1, MaxNodes: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.doc), tc.lim); err != nil {
				t.Errorf("Parse: %v", err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	type errFields struct {
		Kind    ErrorKind
		Offset  int
		Pointer string
	}
	big := bigObject(20, "k03")
	bigLate := bigObject(20, "z", "z")
	deep := strings.Repeat("[", 65536)
	tests := []struct {
		name string
		doc  string
		lim  Limits
		want errFields
		msg  string // a part of the message
	}{
		{name: "empty input", doc: "", want: errFields{ErrSyntax, 0, ""}, msg: "found end of input"},
		{name: "white space only", doc: " \n\t", want: errFields{ErrSyntax, 3, ""}, msg: "expected a JSON value"},
		{name: "trailing data", doc: `{} x`, want: errFields{ErrSyntax, 3, ""}, msg: "expected end of input"},
		{name: "two values", doc: `1 2`, want: errFields{ErrSyntax, 2, ""}, msg: "expected end of input"},
		{name: "leading zero", doc: `01`, want: errFields{ErrSyntax, 1, ""}, msg: "expected end of input"},
		{name: "trailing comma in array", doc: `[1,]`, want: errFields{ErrSyntax, 3, "/1"}, msg: "expected a JSON value"},
		{name: "trailing comma in object", doc: `{"a":1,}`, want: errFields{ErrSyntax, 7, ""}, msg: "expected a member name"},
		{name: "missing colon", doc: `{"a" 1}`, want: errFields{ErrSyntax, 5, ""}, msg: "expected ':'"},
		{name: "missing member value", doc: `{"a":}`, want: errFields{ErrSyntax, 5, "/a"}, msg: "expected a JSON value"},
		{name: "unquoted name", doc: `{a:1}`, want: errFields{ErrSyntax, 1, ""}, msg: "member name"},
		{name: "unclosed array", doc: `[1`, want: errFields{ErrSyntax, 2, ""}, msg: "expected ',' or ']'"},
		{name: "unclosed object", doc: `{"a":1`, want: errFields{ErrSyntax, 6, ""}, msg: "expected ',' or '}'"},
		{name: "unclosed string", doc: `"abc`, want: errFields{ErrSyntax, 4, ""}, msg: "close a string"},
		{name: "unclosed string after escape", doc: `"a\n`, want: errFields{ErrSyntax, 4, ""}, msg: "close a string"},
		{name: "truncated literal", doc: `tru`, want: errFields{ErrSyntax, 0, ""}, msg: "expected a JSON value"},
		{name: "NaN", doc: `NaN`, want: errFields{ErrSyntax, 0, ""}, msg: "expected a JSON value"},
		{name: "single quotes", doc: `'a'`, want: errFields{ErrSyntax, 0, ""}, msg: "expected a JSON value"},
		{name: "bare minus", doc: `-`, want: errFields{ErrSyntax, 1, ""}, msg: "expected a digit"},
		{name: "plus sign", doc: `+1`, want: errFields{ErrSyntax, 0, ""}, msg: "expected a JSON value"},
		{name: "bare fraction", doc: `.5`, want: errFields{ErrSyntax, 0, ""}, msg: "expected a JSON value"},
		{name: "point without digits", doc: `1.`, want: errFields{ErrSyntax, 2, ""}, msg: "after the decimal point"},
		{name: "exponent without digits", doc: `1e+`, want: errFields{ErrSyntax, 3, ""}, msg: "in the exponent"},
		{name: "raw control character in string", doc: "\"a\tb\"", want: errFields{ErrSyntax, 2, ""}, msg: "control character"},
		{name: "raw control character after escape", doc: "\"\\n\x01\"", want: errFields{ErrSyntax, 3, ""}, msg: "control character"},
		{name: "unknown escape", doc: `"\x"`, want: errFields{ErrSyntax, 2, ""}, msg: "valid escape"},
		{name: "short unicode escape", doc: `"\u12G4"`, want: errFields{ErrSyntax, 1, ""}, msg: "four hex digits"},
		{name: "escape at end of input", doc: `"\`, want: errFields{ErrSyntax, 2, ""}, msg: "escape character"},
		{name: "error pointer escapes ~ and /", doc: `{"a/b":{"c~d":[tru]}}`, want: errFields{ErrSyntax, 15, "/a~1b/c~0d/0"}, msg: "expected a JSON value"},

		{name: "duplicate key", doc: `{"a":1,"a":2}`, want: errFields{ErrDuplicateKey, 7, "/a"}, msg: `duplicate member name "a"`},
		{name: "duplicate key spelled with an escape", doc: `{"a":1,"\u0061":2}`, want: errFields{ErrDuplicateKey, 7, "/a"}, msg: "duplicate"},
		{name: "duplicate key nested", doc: `{"x":[{"k":1,"k":2}]}`, want: errFields{ErrDuplicateKey, 13, "/x/0/k"}, msg: "duplicate"},
		{name: "duplicate key in a 21-member object", doc: big, want: errFields{ErrDuplicateKey, strings.LastIndex(big, `"k03"`), "/k03"}, msg: `"k03"`},
		{name: "duplicate of a key added after 16 members", doc: bigLate, want: errFields{ErrDuplicateKey, strings.LastIndex(bigLate, `"z"`), "/z"}, msg: `"z"`},

		{name: "invalid UTF-8 byte", doc: "\"\xff\"", want: errFields{ErrInvalidUTF8, 1, ""}, msg: "invalid UTF-8"},
		{name: "invalid UTF-8 after an escape", doc: "\"\\n\xff\"", want: errFields{ErrInvalidUTF8, 3, ""}, msg: "invalid UTF-8"},
		{name: "truncated UTF-8 sequence in a name", doc: "{\"\xc3\":1}", want: errFields{ErrInvalidUTF8, 2, ""}, msg: "invalid UTF-8"},
		{name: "overlong UTF-8", doc: "\"\xc0\xaf\"", want: errFields{ErrInvalidUTF8, 1, ""}, msg: "invalid UTF-8"},
		{name: "UTF-8-encoded surrogate", doc: "[\"\xed\xa0\x80\"]", want: errFields{ErrInvalidUTF8, 2, "/0"}, msg: "invalid UTF-8"},
		{name: "lone high surrogate", doc: `"\ud800"`, want: errFields{ErrInvalidUTF8, 1, ""}, msg: "lone UTF-16 surrogate"},
		{name: "lone low surrogate", doc: `"\udc00x"`, want: errFields{ErrInvalidUTF8, 1, ""}, msg: "lone UTF-16 surrogate"},
		{name: "high surrogate then a letter escape", doc: `"\ud800\u0041"`, want: errFields{ErrInvalidUTF8, 1, ""}, msg: "surrogate"},
		{name: "two high surrogates", doc: `"\ud800\ud800"`, want: errFields{ErrInvalidUTF8, 1, ""}, msg: "surrogate"},
		{name: "reversed surrogate pair", doc: `"\ude00\ud83d"`, want: errFields{ErrInvalidUTF8, 1, ""}, msg: "surrogate"},
		{name: "lone surrogate inside an array", doc: `["ok","a\ud800"]`, want: errFields{ErrInvalidUTF8, 8, "/1"}, msg: "surrogate"},

		{name: "depth limit", doc: nest(4), lim: Limits{MaxDepth: 3}, want: errFields{ErrDepth, 3, "/0/0/0"}, msg: "deeper than 3"},
		{name: "depth limit in objects", doc: `{"a":{"b":{}}}`, lim: Limits{MaxDepth: 2}, want: errFields{ErrDepth, 10, "/a/b"}, msg: "deeper than 2"},
		{name: "built-in depth cap", doc: nest(10001), want: errFields{ErrDepth, 10000, strings.Repeat("/0", 10000)}, msg: "deeper than 10000"},
		{name: "built-in cap beats a larger limit", doc: nest(10001), lim: Limits{MaxDepth: 1 << 20}, want: errFields{ErrDepth, 10000, strings.Repeat("/0", 10000)}, msg: "deeper than 10000"},
		{name: "65536 open brackets", doc: deep, want: errFields{ErrDepth, 10000, strings.Repeat("/0", 10000)}, msg: "deeper"},
		{name: "65536 open brackets with a small limit", doc: deep, lim: Limits{MaxDepth: 64}, want: errFields{ErrDepth, 64, strings.Repeat("/0", 64)}, msg: "deeper than 64"},
		{name: "node limit", doc: `[1,2,3]`, lim: Limits{MaxNodes: 3}, want: errFields{ErrNodes, 5, "/2"}, msg: "more than 3 values"},
		{name: "node limit counts the top level", doc: `[1]`, lim: Limits{MaxNodes: 1}, want: errFields{ErrNodes, 1, "/0"}, msg: "more than 1 values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), tc.lim)
			perr, ok := err.(*Error)
			if !ok {
				t.Fatalf("Parse returned %v; want a *Error", err)
			}
			got := errFields{perr.Kind, perr.Offset, perr.Pointer}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s\nmessage: %s", diff, perr.Msg)
			}
			if !strings.Contains(perr.Msg, tc.msg) {
				t.Errorf("message %q does not mention %q", perr.Msg, tc.msg)
			}
			if want := fmt.Sprintf("json: %s at byte %d", perr.Msg, perr.Offset); perr.Error() != want {
				t.Errorf("Error() = %q, want %q", perr.Error(), want)
			}
		})
	}
}

func TestValueGet(t *testing.T) {
	v, err := Parse([]byte(`{"a":1,"b":{"c":true}}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := v.Get("b")
	if !ok || b.Kind() != Object {
		t.Fatalf(`Get("b") = %v, %v`, b, ok)
	}
	c, ok := b.Get("c")
	if !ok || c.Kind() != Bool || !c.Bool() {
		t.Fatalf(`Get("c") = %v, %v`, c, ok)
	}
	if _, ok := v.Get("z"); ok {
		t.Error(`Get("z") found a member that does not exist`)
	}
}

func TestKindString(t *testing.T) {
	got := []string{Null.String(), Bool.String(), Number.String(), String.String(),
		Array.String(), Object.String(), Kind(99).String()}
	want := []string{"null", "boolean", "number", "string", "array", "object", "unknown"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Kind.String mismatch (-want +got):\n%s", diff)
	}
}

func TestEscapePointerToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"a/b", "a~1b"},
		{"m~n", "m~0n"},
		{"~1", "~01"},
		{"/~", "~1~0"},
	}
	for _, tc := range tests {
		if got := EscapePointerToken(tc.in); got != tc.want {
			t.Errorf("EscapePointerToken(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestParseDuplicateAfterOrderedNames: names in increasing order skip the
// duplicate check; the first name out of order must still be checked
// against all before it, in small objects and in ones past the linear scan.
func TestParseDuplicateAfterOrderedNames(t *testing.T) {
	object := func(n int, extra ...string) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			fmt.Fprintf(&b, `"k%02d":%d,`, i, i)
		}
		for _, k := range extra {
			fmt.Fprintf(&b, `"%s":0,`, k)
		}
		return strings.TrimSuffix(b.String(), ",") + "}"
	}
	tests := []struct {
		doc     string
		wantDup bool
	}{
		{object(5, "k00"), true},
		{object(5, "k04"), true},
		{object(5, "k02"), true},
		{object(5, "a", "k03"), true},
		{object(5, "a", "b"), false},
		{object(30, "k00"), true},
		{object(30, "k29"), true},
		{object(30, "k17"), true},
		{object(30, "a", "k20"), true},
		{object(30, "a", "b", "c"), false},
		{object(30, "zz", "k10"), true},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.doc), Limits{})
		var perr *Error
		gotDup := errors.As(err, &perr) && perr.Kind == ErrDuplicateKey
		if gotDup != tt.wantDup {
			t.Errorf("%.60s...: duplicate reported %v, want %v (err %v)", tt.doc, gotDup, tt.wantDup, err)
		}
		if !tt.wantDup && err != nil {
			t.Errorf("%.60s...: %v", tt.doc, err)
		}
	}
}

// TestParseDocumentSize: a document longer than maxDocBytes is refused
// rather than given counts that do not fit a node; at the bound it
// parses, and its counts are exact.
func TestParseDocumentSize(t *testing.T) {
	defer func(n int) { maxDocBytes = n }(maxDocBytes)
	maxDocBytes = 7
	v, err := Parse([]byte(`[1,2,3]`), Limits{})
	if err != nil || v.Len() != 3 {
		t.Fatalf("Parse([1,2,3]) = %d items, %v; want 3 items", v.Len(), err)
	}
	_, err = Parse([]byte(`[1,2,3] `), Limits{})
	var perr *Error
	if !errors.As(err, &perr) || perr.Kind != ErrNodes || perr.Offset != 7 ||
		perr.Msg != "expected a document of at most 7 bytes, found 8" {
		t.Fatalf("Parse of 8 bytes = %v, want ErrNodes at 7", err)
	}
}
