package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	long := strings.Repeat("a", Max-1) + "é" + "tail" // é straddles the cut
	tests := []struct{ in, want string }{
		{"", ""},
		{"short", "short"},
		{strings.Repeat("x", Max), strings.Repeat("x", Max)},
		{strings.Repeat("x", Max+1), strings.Repeat("x", Max) + Mark},
		{long, strings.Repeat("a", Max-1) + Mark},
	}
	for _, tt := range tests {
		got := String(tt.in)
		if got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("String(%q) = %q splits a rune", tt.in, got)
		}
		if app := string(Append([]byte("p:"), tt.in)); app != "p:"+tt.want {
			t.Errorf("Append(%q) = %q, want %q", tt.in, app, "p:"+tt.want)
		}
	}
}
