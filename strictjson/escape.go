package strictjson

import "unicode/utf8"

// Escaping chooses how AppendEscaped writes a string. The zero value is
// RFC 8785's form, the one AppendCanonical writes: '"', '\\' and the control
// characters escaped (\b, \t, \n, \f and \r by name, the others as \u00XX
// with lower-case hex digits), everything else as it stands, and invalid
// UTF-8 refused. Each flag departs from it in one way, so that
//
//   - encoding/json.Marshal's form is EscapeHTML | EscapeLineSeparators | ReplaceInvalidUTF8
//     (without EscapeHTML, that of an Encoder with SetEscapeHTML(false));
//   - log/slog's JSONHandler's form is EscapeLineSeparators | ReplaceInvalidUTF8 | HexBackspaceFormFeed.
type Escaping uint8

const (
	// EscapeHTML writes <, > and & as \u003c, \u003e and \u0026.
	EscapeHTML Escaping = 1 << iota
	// EscapeLineSeparators writes U+2028 and U+2029 as \u2028 and \u2029.
	EscapeLineSeparators
	// ReplaceInvalidUTF8 writes each byte that is not part of valid UTF-8
	// as \ufffd instead of refusing the string.
	ReplaceInvalidUTF8
	// HexBackspaceFormFeed writes backspace and form feed as \u0008 and
	// \u000c instead of \b and \f.
	HexBackspaceFormFeed
)

// safeBytes[c] is true for an ASCII byte that stands for itself in a JSON
// string; safeBytesHTML also excludes <, > and &.
var safeBytes, safeBytesHTML = func() (plain, html [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
		html[c] = plain[c] && c != '<' && c != '>' && c != '&'
	}
	return plain, html
}()

// AppendEscaped appends s escaped, as how says, for the inside of a JSON
// string literal (without the quotes) and returns the extended slice. It
// reports false, and returns dst as it was, when s is not valid UTF-8 and
// how does not include ReplaceInvalidUTF8; with it, it always reports true.
func AppendEscaped(dst []byte, s string, how Escaping) ([]byte, bool) {
	safe := &safeBytes
	if how&EscapeHTML != 0 {
		safe = &safeBytesHTML
	}
	orig := dst
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if safe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\b' && how&HexBackspaceFormFeed == 0:
				dst = append(dst, '\\', 'b')
			case c == '\f' && how&HexBackspaceFormFeed == 0:
				dst = append(dst, '\\', 'f')
			default: // other control characters, and <, >, & with EscapeHTML
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if how&ReplaceInvalidUTF8 == 0 {
				return orig, false
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case (r == '\u2028' || r == '\u2029') && how&EscapeLineSeparators != 0:
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...), true
}
