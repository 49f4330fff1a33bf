package preflight

import (
	"strconv"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/strictjson"
)

// appendTypePhrase appends the allowed types as the schema lists them:
// "string", "string or null".
func (s *schema) appendTypePhrase(dst []byte) []byte {
	t := s.typeValue
	if t.Kind() == strictjson.String {
		return append(dst, t.Str()...)
	}
	for it := t.Iter(); it.Next(); {
		if it.Index() > 0 {
			dst = append(dst, " or "...)
		}
		dst = append(dst, it.Value().Str()...)
	}
	return dst
}

// appendFoundType appends the type of v for a type failure; a number that
// is not an integer where one is wanted is shown with its value.
func (s *schema) appendFoundType(dst []byte, v strictjson.Value) []byte {
	if v.Kind() == strictjson.Number && s.types&typeInteger != 0 {
		dst = append(dst, "number "...)
		return clip.Append(dst, v.Str())
	}
	return append(dst, v.Kind().String()...)
}

// echoQuote quotes s for a message, clipped to clip.Max bytes.
func echoQuote(s string) string {
	return strconv.Quote(clip.String(s))
}

// echoJSON renders v as compact JSON for a message, clipped to
// clip.Max bytes.
func echoJSON(v strictjson.Value) string {
	var buf [2*clip.Max + 16]byte
	return string(appendEchoJSON(buf[:0], v))
}

// appendEchoJSON appends echoJSON(v) to dst.
func appendEchoJSON(dst []byte, v strictjson.Value) []byte {
	start := len(dst)
	dst, _ = appendEcho(dst, start, v)
	if len(dst)-start <= clip.Max {
		return dst
	}
	return append(dst[:start+clip.Cut(dst[start:], clip.Max)], clip.Mark...)
}

// appendEchoQuote appends echoQuote(s) to dst.
func appendEchoQuote(dst []byte, s string) []byte {
	if len(s) <= clip.Max {
		return strconv.AppendQuote(dst, s)
	}
	dst = strconv.AppendQuote(dst, s[:clip.Cut(s, clip.Max)])
	return append(append(dst[:len(dst)-1], clip.Mark...), '"') // the mark inside the quotes
}

// appendEcho writes v to dst as compact JSON (strings quoted Go-style), and
// stops early, reporting false, once what it wrote since start has grown
// past clip.Max.
func appendEcho(dst []byte, start int, v strictjson.Value) ([]byte, bool) {
	if len(dst)-start > clip.Max {
		return dst, false
	}
	switch v.Kind() {
	case strictjson.Null:
		dst = append(dst, "null"...)
	case strictjson.Bool:
		dst = strconv.AppendBool(dst, v.Bool())
	case strictjson.Number:
		dst = append(dst, clip.String(v.Str())...)
	case strictjson.String:
		dst = appendEchoQuote(dst, v.Str())
	case strictjson.Array:
		dst = append(dst, '[')
		for it := v.Iter(); it.Next(); {
			if it.Index() > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendEcho(dst, start, it.Value()); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	case strictjson.Object:
		dst = append(dst, '{')
		for it := v.Iter(); it.Next(); {
			if it.Index() > 0 {
				dst = append(dst, ',')
			}
			dst = appendEchoQuote(dst, it.Key())
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendEcho(dst, start, it.Value()); !ok {
				return dst, false
			}
		}
		dst = append(dst, '}')
	}
	return dst, len(dst)-start <= clip.Max
}

// characters is the unit after a length limit: " character" for 1.
func characters(limit string) string {
	if limit == "1" {
		return " character"
	}
	return " characters"
}
