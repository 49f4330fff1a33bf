package jsonv

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits bounds a document while it is parsed. A zero field means no limit
// of that kind.
type Limits struct {
	// MaxDepth is the deepest nesting allowed; the top-level value is level 1.
	MaxDepth int
	// MaxNodes is the largest number of values allowed; every value counts
	// as one node (object keys do not).
	MaxNodes int
}

// ErrorKind classifies a parse error.
type ErrorKind uint8

// The kinds of parse error.
const (
	ErrSyntax       ErrorKind = iota // not JSON
	ErrDuplicateKey                  // an object member name appears twice
	ErrInvalidUTF8                   // invalid UTF-8 or a lone surrogate escape
	ErrDepth                         // Limits.MaxDepth exceeded
	ErrNodes                         // Limits.MaxNodes exceeded
)

// Error describes why a document was rejected.
type Error struct {
	Kind ErrorKind
	// Offset is the byte offset at which the problem was found.
	Offset int
	// Pointer is the RFC 6901 JSON Pointer of the value being parsed.
	Pointer string
	// Msg says what was expected and what was found.
	Msg string

	tokens []string // pointer tokens, innermost first, while unwinding
}

func (e *Error) Error() string {
	return "json: " + e.Msg + " at byte " + strconv.Itoa(e.Offset)
}

// parserPool recycles parsers so that their scratch stacks are not grown
// again on every document.
var parserPool = sync.Pool{New: func() any { return new(parser) }}

// release returns p to the pool, dropping references into the document.
func (p *parser) release() {
	clear(p.items)
	clear(p.mems)
	p.items, p.mems, p.src = p.items[:0], p.mems[:0], ""
	parserPool.Put(p)
}

// hardMaxDepth keeps recursion bounded whatever the caller's limits are.
const hardMaxDepth = 10000

type parser struct {
	src   string
	pos   int
	depth int
	nodes int
	lim   Limits
	items []Value  // scratch stack of array elements under construction
	mems  []Member // scratch stack of object members under construction
}

// Parse parses data as one JSON document. It rejects empty input, trailing
// data (other than white space), invalid UTF-8, lone surrogates in escapes,
// duplicate object keys and documents beyond lim.
func Parse(data []byte, lim Limits) (Value, error) {
	p := parserPool.Get().(*parser)
	defer p.release()
	p.src, p.pos, p.depth, p.nodes, p.lim = string(data), 0, 0, 0, lim
	if p.lim.MaxDepth <= 0 || p.lim.MaxDepth > hardMaxDepth {
		p.lim.MaxDepth = hardMaxDepth
	}
	p.skipSpace()
	if p.pos == len(p.src) {
		return Value{}, p.fail(ErrSyntax, "expected a JSON value, found end of input")
	}
	v, err := p.value()
	if err != nil {
		return Value{}, finish(err)
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return Value{}, finish(p.fail(ErrSyntax, "expected end of input after the top-level value, found "+p.found()))
	}
	return v, nil
}

func finish(err *Error) error {
	var b strings.Builder
	for i := len(err.tokens) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(EscapePointerToken(err.tokens[i]))
	}
	err.Pointer = b.String()
	err.tokens = nil
	return err
}

// EscapePointerToken escapes one RFC 6901 reference token.
func EscapePointerToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func (p *parser) fail(kind ErrorKind, msg string) *Error {
	return &Error{Kind: kind, Offset: p.pos, Msg: msg}
}

// found describes what is at the current position, for messages.
func (p *parser) found() string {
	if p.pos >= len(p.src) {
		return "end of input"
	}
	c := p.src[p.pos]
	if c < 0x20 || c >= 0x7f {
		return "byte 0x" + strconv.FormatUint(uint64(c), 16)
	}
	return strconv.Quote(string(c))
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (Value, *Error) {
	p.nodes++
	if p.lim.MaxNodes > 0 && p.nodes > p.lim.MaxNodes {
		return Value{}, p.fail(ErrNodes, "document has more than "+strconv.Itoa(p.lim.MaxNodes)+" values")
	}
	if p.pos >= len(p.src) {
		return Value{}, p.fail(ErrSyntax, "expected a JSON value, found end of input")
	}
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: String, Str: s, Start: start, End: p.pos}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", Value{Kind: Bool, Bool: true})
	case c == 'f':
		return p.literal("false", Value{Kind: Bool})
	case c == 'n':
		return p.literal("null", Value{Kind: Null})
	}
	return Value{}, p.fail(ErrSyntax, "expected a JSON value, found "+p.found())
}

func (p *parser) literal(word string, v Value) (Value, *Error) {
	if !strings.HasPrefix(p.src[p.pos:], word) {
		return Value{}, p.fail(ErrSyntax, "expected a JSON value, found "+p.found())
	}
	v.Start = p.pos
	p.pos += len(word)
	v.End = p.pos
	return v, nil
}

func (p *parser) enter() *Error {
	p.depth++
	if p.depth > p.lim.MaxDepth {
		return p.fail(ErrDepth, "document is nested deeper than "+strconv.Itoa(p.lim.MaxDepth)+" levels")
	}
	return nil
}

func (p *parser) object() (Value, *Error) {
	start := p.pos
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	p.pos++ // '{'
	mark := len(p.mems)
	var seen map[string]struct{} // built once an object grows past a few members
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		p.depth--
		return Value{Kind: Object, Members: []Member{}, Start: start, End: p.pos}, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return Value{}, p.fail(ErrSyntax, "expected a member name in double quotes, found "+p.found())
		}
		keyPos := p.pos
		key, err := p.str()
		if err != nil {
			return Value{}, err
		}
		if p.duplicate(mark, key, &seen) {
			p.pos = keyPos
			err := p.fail(ErrDuplicateKey, "duplicate member name "+strconv.Quote(key))
			err.tokens = append(err.tokens, key)
			return Value{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return Value{}, p.fail(ErrSyntax, "expected ':' after a member name, found "+p.found())
		}
		p.pos++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			err.tokens = append(err.tokens, key)
			return Value{}, err
		}
		p.mems = append(p.mems, Member{Key: key, Value: v})
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == '}' {
			p.pos++
			break
		}
		return Value{}, p.fail(ErrSyntax, "expected ',' or '}' after an object member, found "+p.found())
	}
	members := make([]Member, len(p.mems)-mark)
	copy(members, p.mems[mark:])
	clear(p.mems[mark:])
	p.mems = p.mems[:mark]
	p.depth--
	return Value{Kind: Object, Members: members, Start: start, End: p.pos}, nil
}

// duplicate reports whether key is already a member of the object whose
// members start at mark on the scratch stack.
func (p *parser) duplicate(mark int, key string, seen *map[string]struct{}) bool {
	const linear = 16
	n := len(p.mems) - mark
	if n < linear {
		for i := mark; i < len(p.mems); i++ {
			if p.mems[i].Key == key {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*n)
		for i := mark; i < len(p.mems); i++ {
			(*seen)[p.mems[i].Key] = struct{}{}
		}
	}
	if _, ok := (*seen)[key]; ok {
		return true
	}
	(*seen)[key] = struct{}{}
	return false
}

func (p *parser) array() (Value, *Error) {
	start := p.pos
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	p.pos++ // '['
	mark := len(p.items)
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.depth--
		return Value{Kind: Array, Items: []Value{}, Start: start, End: p.pos}, nil
	}
	for {
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			err.tokens = append(err.tokens, strconv.Itoa(len(p.items)-mark))
			return Value{}, err
		}
		p.items = append(p.items, v)
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			break
		}
		return Value{}, p.fail(ErrSyntax, "expected ',' or ']' after an array element, found "+p.found())
	}
	items := make([]Value, len(p.items)-mark)
	copy(items, p.items[mark:])
	clear(p.items[mark:])
	p.items = p.items[:mark]
	p.depth--
	return Value{Kind: Array, Items: items, Start: start, End: p.pos}, nil
}

func (p *parser) number() (Value, *Error) {
	s, start := p.src, p.pos
	i := p.pos
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return Value{}, p.fail(ErrSyntax, "expected a digit in a number, found "+p.found())
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return Value{}, p.fail(ErrSyntax, "expected a digit after the decimal point, found "+p.found())
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return Value{}, p.fail(ErrSyntax, "expected a digit in the exponent, found "+p.found())
		}
	}
	p.pos = i
	return Value{Kind: Number, Str: s[start:i], Start: start, End: i}, nil
}

// str parses a string starting at the opening quote and returns its decoded
// text. Strings without escapes share memory with the document.
func (p *parser) str() (string, *Error) {
	s := p.src
	p.pos++ // opening quote
	start := p.pos
	i := p.pos
	for i < len(s) {
		c := s[i]
		if c == '"' {
			p.pos = i + 1
			return s[start:i], nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.pos = i
			return "", p.fail(ErrSyntax, "expected an escaped control character in a string, found "+p.found())
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			p.pos = i
			return "", p.fail(ErrInvalidUTF8, "string contains invalid UTF-8")
		}
		i += size
	}
	if i >= len(s) {
		p.pos = i
		return "", p.fail(ErrSyntax, "expected '\"' to close a string, found end of input")
	}
	// Slow path: the string has escapes.
	b := make([]byte, 0, i-start+16)
	b = append(b, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(b), nil
		case c == '\\':
			if i+1 >= len(s) {
				p.pos = i + 1
				return "", p.fail(ErrSyntax, "expected an escape character, found end of input")
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
				i += 2
			case 'b':
				b = append(b, '\b')
				i += 2
			case 'f':
				b = append(b, '\f')
				i += 2
			case 'n':
				b = append(b, '\n')
				i += 2
			case 'r':
				b = append(b, '\r')
				i += 2
			case 't':
				b = append(b, '\t')
				i += 2
			case 'u':
				r, ok := hex4(s, i+2)
				if !ok {
					p.pos = i
					return "", p.fail(ErrSyntax, "expected four hex digits after \\u")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(0), false
					if r < 0xdc00 && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2, ok2 = hex4(s, i+2)
					}
					dec := utf16.DecodeRune(r, r2)
					if !ok2 || dec == utf8.RuneError {
						p.pos = i - 6
						return "", p.fail(ErrInvalidUTF8, "string contains a lone UTF-16 surrogate escape")
					}
					r = dec
					i += 6
				}
				b = utf8.AppendRune(b, r)
			default:
				p.pos = i + 1
				return "", p.fail(ErrSyntax, "expected a valid escape character, found "+p.found())
			}
		case c < 0x20:
			p.pos = i
			return "", p.fail(ErrSyntax, "expected an escaped control character in a string, found "+p.found())
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				p.pos = i
				return "", p.fail(ErrInvalidUTF8, "string contains invalid UTF-8")
			}
			b = append(b, s[i:i+size]...)
			i += size
		}
	}
	p.pos = i
	return "", p.fail(ErrSyntax, "expected '\"' to close a string, found end of input")
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
