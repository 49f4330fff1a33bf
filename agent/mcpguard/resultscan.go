package mcpguard

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/agentpreflight/preflight"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultFacts is what the guard reads from a fresh tools/call result: how
// the call ended and what its output check needs.
type resultFacts struct {
	inputRequired bool // resultType "input_required"
	outcome       preflight.Outcome
	isError       bool            // as encoding/json reads isError (for the output check)
	structured    json.RawMessage // structuredContent as written; nil when absent
}

// readResult reads the facts of result. It scans the raw bytes when the
// result has the plain shape nearly every tool answers with, and
// otherwise decodes it as before (the MCP Go SDK's decoder for the
// outcome, encoding/json for the rest), so that the facts are the same
// either way: the scan takes a result only when both decoders would read
// it as it does.
func readResult(result []byte) resultFacts {
	if f, ok := scanResult(result); ok {
		return f
	}
	return decodeResult(result)
}

// decodeResult reads the facts of result by decoding it.
func decodeResult(result []byte) resultFacts {
	f := resultFacts{inputRequired: inputRequired(result), outcome: preflight.OutcomeTransientFailure}
	var res mcp.CallToolResult
	if json.Unmarshal(result, &res) == nil {
		f.outcome = Classify(&res, nil)
	}
	var r struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if json.Unmarshal(result, &r) == nil {
		f.isError, f.structured = r.IsError, r.StructuredContent
	} else {
		f.isError = true // the output check skips a result it cannot read
	}
	return f
}

// The members of a result the guard reads, by the decoders' names.
var resultMembers = []string{"content", "structuredContent", "isError", "_meta", "resultType"}

// The members of an input_required result, which the MCP Go SDK's decoder
// also reads (a requestState that is not a string fails the decoding, and
// with it the outcome): a result with one goes to the decoders.
var inputMembers = []string{"requestState", "inputRequests"}

// scanResult reads the facts of result from its bytes, without decoding
// it; false when result is not of the plain shape it takes: one valid
// UTF-8 JSON object, nested at most 64 deep, whose numbers are short
// decimals (no exponent, at most 15 digits: what every decoder reads
// alike), whose members named like those the guard reads are written
// exactly as named and once, with isError a boolean, resultType a
// string without escapes, _meta an object, and content an array of text
// blocks (objects with a "type" of "text" and, if any, a string "text"),
// and, when isError is true, whose texts are ASCII without escapes; and
// without the members of an input_required result (inputMembers).
func scanResult(b []byte) (resultFacts, bool) {
	var f resultFacts
	if !utf8.Valid(b) || !json.Valid(b) {
		return f, false
	}
	s := scanner{b: b}
	s.ws()
	if !s.eat('{') {
		return f, false
	}
	var seen [5]bool
	plainText := true // every text is ASCII without escapes
	var texts [][]byte
	s.ws()
	if s.eat('}') {
		return resultFacts{outcome: preflight.OutcomeSuccess}, s.end()
	}
	for {
		s.ws()
		key, escaped := s.str()
		s.ws()
		s.eat(':')
		s.ws()
		for _, m := range inputMembers {
			if escaped || bytes.EqualFold(key, []byte(m)) {
				return f, false
			}
		}
		k := -1
		for i, m := range resultMembers {
			if len(key) == len(m) && string(key) == m && !escaped {
				k = i
				break
			}
			if escaped || bytes.EqualFold(key, []byte(m)) {
				// A name a decoder may take for a member the guard
				// reads: written otherwise than exactly.
				if escaped || string(key) != m {
					return f, false
				}
			}
		}
		if k >= 0 {
			if seen[k] {
				return f, false
			}
			seen[k] = true
		}
		start := s.i
		switch k {
		case 0: // content
			if !s.eat('[') {
				return f, false
			}
			s.ws()
			if !s.eat(']') {
				for {
					s.ws()
					t, plain, ok := s.textBlock()
					if !ok {
						return f, false
					}
					plainText = plainText && plain
					texts = append(texts, t)
					s.ws()
					if s.eat(']') {
						break
					}
					s.eat(',')
				}
			}
		case 2: // isError
			switch {
			case bytes.HasPrefix(b[s.i:], []byte("true")):
				f.isError = true
				s.i += 4
			case bytes.HasPrefix(b[s.i:], []byte("false")):
				s.i += 5
			default:
				return f, false
			}
		case 3: // _meta
			if s.peek() != '{' || !s.skip() {
				return f, false
			}
		case 4: // resultType
			if s.peek() != '"' {
				return f, false
			}
			v, esc := s.str()
			if esc {
				return f, false
			}
			f.inputRequired = string(v) == "input_required"
		default: // structuredContent, or a member the guard does not read
			if !s.skip() {
				return f, false
			}
			if k == 1 {
				f.structured = json.RawMessage(b[start:s.i])
			}
		}
		s.ws()
		if s.eat('}') {
			break
		}
		if !s.eat(',') {
			return f, false
		}
	}
	if !s.end() || s.surrogate {
		return f, false
	}
	f.outcome = preflight.OutcomeSuccess
	if f.isError {
		if !plainText {
			return f, false
		}
		var text strings.Builder
		for _, t := range texts {
			text.WriteString(strings.ToLower(string(t)))
			text.WriteByte(' ')
		}
		f.outcome = preflight.OutcomeTerminalFailure
		if transientText(text.String()) {
			f.outcome = preflight.OutcomeTransientFailure
		}
	}
	return f, true
}

// scanner walks JSON text that json.Valid accepted.
type scanner struct {
	b         []byte
	i         int
	depth     int
	surrogate bool // a string holds a \u escape of a UTF-16 surrogate, which decoders may read apart
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str reads a string at s.i and returns its bytes between the quotes,
// and whether it holds an escape.
func (s *scanner) str() ([]byte, bool) {
	s.i++ // the opening quote
	start, escaped := s.i, false
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			if s.i+2 < len(s.b) && s.b[s.i+1] == 'u' && (s.b[s.i+2] == 'd' || s.b[s.i+2] == 'D') {
				s.surrogate = s.surrogate || (s.i+3 < len(s.b) && strings.IndexByte("89abcdefABCDEF", s.b[s.i+3]) >= 0)
			}
			s.i += 2
			continue
		case '"':
			v := s.b[start:s.i]
			s.i++
			return v, escaped
		}
		s.i++
	}
	return s.b[start:], escaped
}

// maxScanDepth is the deepest nesting scanResult takes; deeper results
// are decoded (the SDK refuses past 1000).
const maxScanDepth = 64

// skip passes over the value at s.i; false when it is nested too deep or
// holds a number that is not a short decimal.
func (s *scanner) skip() bool {
	switch c := s.peek(); c {
	case '"':
		s.str()
		return true
	case '{', '[':
		s.depth++
		if s.depth > maxScanDepth {
			return false
		}
		s.i++
		s.ws()
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		if s.eat(close) {
			s.depth--
			return true
		}
		for {
			s.ws()
			if c == '{' {
				s.str()
				s.ws()
				s.eat(':')
				s.ws()
			}
			if !s.skip() {
				return false
			}
			s.ws()
			if s.eat(close) {
				s.depth--
				return true
			}
			s.eat(',')
		}
	case 't':
		s.i += 4
		return true
	case 'f':
		s.i += 5
		return true
	case 'n':
		s.i += 4
		return true
	default: // a number
		digits := 0
		for s.i < len(s.b) {
			switch c := s.b[s.i]; {
			case c >= '0' && c <= '9':
				digits++
			case c == '-' || c == '.':
			case c == 'e' || c == 'E':
				return false
			default:
				return digits <= 15
			}
			s.i++
		}
		return digits <= 15
	}
}

// textBlock reads a content block at s.i that is a text block: an object
// with "type" "text" and at most a string "text" besides, each once and
// written exactly. It returns the text as written, and whether it is
// ASCII without escapes.
func (s *scanner) textBlock() ([]byte, bool, bool) {
	if !s.eat('{') {
		return nil, false, false
	}
	var text []byte
	plain, typed, hasText := true, false, false
	s.ws()
	if s.eat('}') {
		return nil, false, false // no type
	}
	for {
		s.ws()
		if s.peek() != '"' {
			return nil, false, false
		}
		key, esc := s.str()
		if esc {
			return nil, false, false
		}
		s.ws()
		s.eat(':')
		s.ws()
		if s.peek() != '"' {
			return nil, false, false
		}
		v, vesc := s.str()
		switch string(key) {
		case "type":
			if typed || vesc || string(v) != "text" {
				return nil, false, false
			}
			typed = true
		case "text":
			if hasText {
				return nil, false, false
			}
			hasText, text = true, v
			if vesc {
				plain = false
			}
			for _, c := range v {
				if c >= utf8.RuneSelf {
					plain = false
					break
				}
			}
		default:
			return nil, false, false
		}
		s.ws()
		if s.eat('}') {
			break
		}
		if !s.eat(',') {
			return nil, false, false
		}
	}
	return text, plain, typed
}
