// Package clip is the module's one policy for repeating caller-supplied
// text in a message: at most [Max] bytes, cut on a UTF-8 boundary, with
// [Mark] where text was cut. The library's decoders and validator and the
// server's paywall all use it, so every message clips the same way.
package clip

import "unicode/utf8"

// Max is how many bytes of caller-supplied text a message repeats.
const Max = 64

// Mark ends text that was cut.
const Mark = "…"

// String returns s, or when it is longer than Max bytes, its first Max
// bytes (fewer, to keep whole runes) followed by Mark.
func String(s string) string {
	if len(s) <= Max {
		return s
	}
	return s[:Cut(s, Max)] + Mark
}

// Append appends String(s) to dst.
func Append(dst []byte, s string) []byte {
	if len(s) <= Max {
		return append(dst, s...)
	}
	return append(append(dst, s[:Cut(s, Max)]...), Mark...)
}

// Cut returns the largest n <= max that does not split a UTF-8 sequence of
// s, for cutting text that is longer than max bytes.
func Cut[T string | []byte](s T, max int) int {
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
