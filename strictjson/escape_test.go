package strictjson_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/strictjson"
)

// The combinations of flags that stand for encoding/json's and slog's forms.
const (
	marshalEscaping = strictjson.EscapeHTML | strictjson.EscapeLineSeparators | strictjson.ReplaceInvalidUTF8
	slogEscaping    = strictjson.EscapeLineSeparators | strictjson.ReplaceInvalidUTF8 | strictjson.HexBackspaceFormFeed
)

func TestAppendEscaped(t *testing.T) {
	const all = strictjson.EscapeHTML | strictjson.EscapeLineSeparators |
		strictjson.ReplaceInvalidUTF8 | strictjson.HexBackspaceFormFeed
	tests := []struct {
		name string
		in   string
		how  strictjson.Escaping
		want string // "" with ok false: refused
		ok   bool
	}{
		{"empty", "", 0, "", true},
		{"plain", "search é 😀", all, "search é 😀", true},
		{"quote and backslash", `a"b\c`, 0, `a\"b\\c`, true},
		{"named controls", "\b\t\n\f\r", 0, `\b\t\n\f\r`, true},
		{"other controls", "\x00\x01\x1f\x7f", 0, `\u0000\u0001\u001f` + "\x7f", true},
		{"hex backspace form feed", "\b\t\n\f\r", strictjson.HexBackspaceFormFeed, `\u0008\t\n\u000c\r`, true},
		{"html kept", "<a>&", 0, "<a>&", true},
		{"html escaped", "<a>&", strictjson.EscapeHTML, `\u003ca\u003e\u0026`, true},
		{"line separators kept", "a\u2028b\u2029c", 0, "a\u2028b\u2029c", true},
		{"line separators escaped", "a\u2028b\u2029c", strictjson.EscapeLineSeparators, `a\u2028b\u2029c`, true},
		{"invalid refused", "ab\xffc", strictjson.EscapeHTML | strictjson.EscapeLineSeparators, "", false},
		{"surrogate refused", "\xed\xa0\x80", 0, "", false},
		{"invalid replaced per byte", "a\xff\xfeb", strictjson.ReplaceInvalidUTF8, `a\ufffd\ufffdb`, true},
		{"truncated rune replaced", "é\xe2\x82", strictjson.ReplaceInvalidUTF8, `é\ufffd\ufffd`, true},
		{"mixed", "<\"\u2028\xff\f>", all, `\u003c\"\u2028\ufffd\u000c\u003e`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("prefix:")
			got, ok := strictjson.AppendEscaped(dst, tt.in, tt.how)
			want := "prefix:" + tt.want
			if ok != tt.ok || string(got) != want {
				t.Errorf("AppendEscaped(%q, %04b) = %q, %v; want %q, %v", tt.in, tt.how, got, ok, want, tt.ok)
			}
		})
	}
}

// marshalNoHTML is encoding/json's form of s with SetEscapeHTML(false),
// quotes included.
func marshalNoHTML(t testing.TB, s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// slogForm is what slog's JSONHandler writes for s as an attribute value,
// quotes included.
func slogForm(t testing.TB, s string) string {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
				return slog.Attr{}
			}
			return a
		},
	})
	slog.New(h).LogAttrs(context.Background(), slog.LevelInfo, "", slog.String("s", s))
	line := buf.String()
	if !strings.HasPrefix(line, `{"s":`) || !strings.HasSuffix(line, "}\n") {
		t.Fatalf("unexpected slog line %q", line)
	}
	return line[len(`{"s":`) : len(line)-len("}\n")]
}

func quoted(t testing.TB, s string, how strictjson.Escaping) (string, bool) {
	t.Helper()
	b, ok := strictjson.AppendEscaped([]byte{'"'}, s, how)
	return string(append(b, '"')), ok
}

// FuzzAppendEscaped compares AppendEscaped with encoding/json and slog where
// they must agree, and the zero Escaping with encoding/json's form of each
// piece of s between line separators (RFC 8785 leaves them as they are).
func FuzzAppendEscaped(f *testing.F) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "\b\f\n\r\t\x00\x1f\x7f", "a\u2028b\u2029c", "\xff\xed\xa0\x80é\xe2\x82", `\u2028`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := quoted(t, s, marshalEscaping); !ok || got != string(want) {
			t.Errorf("marshal form of %q = %q, %v; encoding/json writes %s", s, got, ok, want)
		}
		if got, ok := quoted(t, s, marshalEscaping&^strictjson.EscapeHTML); !ok || got != marshalNoHTML(t, s) {
			t.Errorf("no-HTML form of %q = %q, %v; encoding/json writes %s", s, got, ok, marshalNoHTML(t, s))
		}
		if got, ok := quoted(t, s, slogEscaping); !ok || got != slogForm(t, s) {
			t.Errorf("slog form of %q = %q, %v; slog writes %s", s, got, ok, slogForm(t, s))
		}

		got, ok := quoted(t, s, 0)
		if ok != utf8.ValidString(s) {
			t.Fatalf("canonical form of %q reports %v; valid UTF-8: %v", s, ok, !ok)
		}
		if !ok {
			return
		}
		var b strings.Builder
		b.WriteByte('"')
		piece := 0
		for i, r := range s {
			if r == '\u2028' || r == '\u2029' {
				inner := marshalNoHTML(t, s[piece:i])
				b.WriteString(inner[1 : len(inner)-1])
				b.WriteRune(r)
				piece = i + utf8.RuneLen(r)
			}
		}
		inner := marshalNoHTML(t, s[piece:])
		b.WriteString(inner[1 : len(inner)-1])
		b.WriteByte('"')
		if got != b.String() {
			t.Errorf("canonical form of %q = %q; want %q", s, got, b.String())
		}
	})
}

func ExampleAppendEscaped() {
	s := "<b>\"tea\" & cake</b>\x01"
	canonical, _ := strictjson.AppendEscaped(nil, s, 0)
	fmt.Printf("%s\n", canonical)
	marshal, _ := strictjson.AppendEscaped(nil, s,
		strictjson.EscapeHTML|strictjson.EscapeLineSeparators|strictjson.ReplaceInvalidUTF8)
	fmt.Printf("%s\n", marshal)
	_, ok := strictjson.AppendEscaped(nil, "bad \xff byte", 0)
	fmt.Println(ok)
	replaced, _ := strictjson.AppendEscaped(nil, "bad \xff byte", strictjson.ReplaceInvalidUTF8)
	fmt.Printf("%s\n", replaced)
	// Output:
	// <b>\"tea\" & cake</b>\u0001
	// \u003cb\u003e\"tea\" \u0026 cake\u003c/b\u003e\u0001
	// false
	// bad \ufffd byte
}
