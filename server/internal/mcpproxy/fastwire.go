package mcpproxy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readWire reads the JSON-RPC message data on the direct path, for a
// fraction of what the SDK's decoder costs (which sets up a 32 KB decoder
// for each message). It takes only a plain shape and leaves anything else
// to the SDK's decoder: ok false means "not judged here", never "invalid".
//
// The shape: one object, nothing after it but white space, whose members
// are among jsonrpc (exactly "2.0", present), id (a string without
// escapes, or an integer of at most 15 digits: those the SDK reads
// exactly through a float64), method (a string without escapes), params
// and result (any valid JSON value, kept as it is written), each at most
// once, with names written without escapes; strings are valid UTF-8
// without control characters, and nesting stays well below the SDK's
// bound. A message with an error member, or any other, is the SDK's to
// read. What readWire takes the SDK's decoder reads the same way: the
// same id, method, and params and result byte for byte (FuzzReadWire).
func readWire(data []byte) (m wireMsg, ok bool) {
	r := wireReader{data: data}
	r.space()
	if !r.byte('{') {
		return m, false
	}
	var seen [5]bool // jsonrpc, id, method, params, result
	for first := true; ; first = false {
		r.space()
		if first && r.byte('}') {
			break
		}
		name, ok := r.plainString()
		if !ok {
			return m, false
		}
		r.space()
		if !r.byte(':') {
			return m, false
		}
		r.space()
		k := -1
		switch name {
		case "jsonrpc":
			k = 0
			if v, ok := r.plainString(); !ok || v != "2.0" {
				return m, false
			}
		case "id":
			k = 1
			if m.id, ok = r.id(); !ok {
				return m, false
			}
		case "method":
			k = 2
			if m.method, ok = r.plainString(); !ok {
				return m, false
			}
			m.hasMethod = true
		case "params", "result":
			k = 3
			if name == "result" {
				k = 4
			}
			start := r.i
			if !r.value(2) {
				return m, false
			}
			if k == 3 {
				m.params = json.RawMessage(data[start:r.i])
			} else {
				m.result = json.RawMessage(data[start:r.i])
			}
		default:
			return m, false
		}
		if seen[k] {
			return m, false
		}
		seen[k] = true
		r.space()
		if r.byte(',') {
			continue
		}
		if !r.byte('}') {
			return m, false
		}
		break
	}
	r.space()
	if r.i != len(data) || !seen[0] || !m.id.IsValid() {
		return m, false
	}
	if m.hasMethod == seen[4] { // a request has no result, a response a result
		return m, false
	}
	return m, true
}

// wireMsg is what readWire reads.
type wireMsg struct {
	id        jsonrpc.ID
	method    string
	hasMethod bool
	params    json.RawMessage
	result    json.RawMessage
}

// request returns m as the SDK's request.
func (m wireMsg) request() *jsonrpc.Request {
	return &jsonrpc.Request{ID: m.id, Method: m.method, Params: m.params}
}

// decodeUpstream decodes a message of the upstream's answer: a plain
// response by readWire, anything else by the SDK's decoder.
func decodeUpstream(data []byte) (jsonrpc.Message, error) {
	if m, ok := readWire(data); ok && !m.hasMethod {
		return &jsonrpc.Response{ID: m.id, Result: m.result}, nil
	}
	return jsonrpc.DecodeMessage(data)
}

// maxWireDepth bounds the nesting readWire takes, far below the SDK's
// 1000.
const maxWireDepth = 200

// wireReader reads JSON from data at i.
type wireReader struct {
	data []byte
	i    int
}

func (r *wireReader) space() {
	for r.i < len(r.data) {
		switch r.data[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// byte consumes c if it is next.
func (r *wireReader) byte(c byte) bool {
	if r.i < len(r.data) && r.data[r.i] == c {
		r.i++
		return true
	}
	return false
}

// plainString reads a string without escapes, of valid UTF-8 and no
// control characters.
func (r *wireReader) plainString() (string, bool) {
	if !r.byte('"') {
		return "", false
	}
	start := r.i
	for r.i < len(r.data) {
		switch c := r.data[r.i]; {
		case c == '"':
			s := string(r.data[start:r.i])
			r.i++
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			r.i++
		default:
			ch, n := utf8.DecodeRune(r.data[r.i:])
			if ch == utf8.RuneError && n <= 1 {
				return "", false
			}
			r.i += n
		}
	}
	return "", false
}

// id reads a request id: a plain string, or an integer of at most 15
// digits.
func (r *wireReader) id() (jsonrpc.ID, bool) {
	if r.i < len(r.data) && r.data[r.i] == '"' {
		s, ok := r.plainString()
		if !ok {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	start := r.i
	r.byte('-')
	digits := r.i
	for r.i < len(r.data) && r.data[r.i] >= '0' && r.data[r.i] <= '9' {
		r.i++
	}
	n := r.i - digits
	if n == 0 || n > 15 || n > 1 && r.data[digits] == '0' {
		return jsonrpc.ID{}, false
	}
	if r.i < len(r.data) {
		switch r.data[r.i] {
		case '.', 'e', 'E':
			return jsonrpc.ID{}, false
		}
	}
	v, err := strconv.ParseInt(string(r.data[start:r.i]), 10, 64)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(v))
	return id, err == nil
}

// value skips one valid JSON value at nesting depth.
func (r *wireReader) value(depth int) bool {
	if r.i >= len(r.data) {
		return false
	}
	switch c := r.data[r.i]; {
	case c == '{' || c == '[':
		if depth >= maxWireDepth {
			return false
		}
		r.i++
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		r.space()
		if r.byte(end) {
			return true
		}
		for {
			if c == '{' {
				if !r.str() {
					return false
				}
				r.space()
				if !r.byte(':') {
					return false
				}
				r.space()
			}
			if !r.value(depth + 1) {
				return false
			}
			r.space()
			if r.byte(',') {
				r.space()
				continue
			}
			return r.byte(end)
		}
	case c == '"':
		return r.str()
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	default:
		return r.number()
	}
}

func (r *wireReader) literal(lit string) bool {
	if len(r.data)-r.i >= len(lit) && string(r.data[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return true
	}
	return false
}

// str skips a valid string: escapes as JSON has them, valid UTF-8, no
// control characters.
func (r *wireReader) str() bool {
	if !r.byte('"') {
		return false
	}
	for r.i < len(r.data) {
		switch c := r.data[r.i]; {
		case c == '"':
			r.i++
			return true
		case c == '\\':
			r.i++
			if r.i >= len(r.data) {
				return false
			}
			switch r.data[r.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				r.i++
			case 'u':
				if len(r.data)-r.i < 5 {
					return false
				}
				for _, h := range r.data[r.i+1 : r.i+5] {
					if !isHex(h) {
						return false
					}
				}
				r.i += 5
			default:
				return false
			}
		case c < 0x20:
			return false
		case c < utf8.RuneSelf:
			r.i++
		default:
			ch, n := utf8.DecodeRune(r.data[r.i:])
			if ch == utf8.RuneError && n <= 1 {
				return false
			}
			r.i += n
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number skips a number as JSON writes it.
func (r *wireReader) number() bool {
	r.byte('-')
	switch {
	case r.byte('0'):
	case r.i < len(r.data) && r.data[r.i] >= '1' && r.data[r.i] <= '9':
		r.digits()
	default:
		return false
	}
	if r.byte('.') && !r.digits() {
		return false
	}
	if r.byte('e') || r.byte('E') {
		if !r.byte('+') {
			r.byte('-')
		}
		if !r.digits() {
			return false
		}
	}
	return true
}

// digits skips one or more digits.
func (r *wireReader) digits() bool {
	start := r.i
	for r.i < len(r.data) && r.data[r.i] >= '0' && r.data[r.i] <= '9' {
		r.i++
	}
	return r.i > start
}

// encodeMessage encodes msg as jsonrpc.EncodeMessage does, the same
// bytes, by encodePlain when it takes msg.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	if data, ok := encodePlain(msg); ok {
		return data, nil
	}
	return jsonrpc.EncodeMessage(msg)
}

// encodePlain returns what jsonrpc.EncodeMessage makes of msg, byte for
// byte, when msg is plain: a request (a notification too), or a response
// without an error, whose id is absent, a number or a string, and whose
// id and method need no escaping. The parts the SDK's encoder would
// compact (params, result) are compacted as it does. It reports false
// for any other message, which the SDK's encoder then takes.
func encodePlain(msg jsonrpc.Message) ([]byte, bool) {
	if !plainAgrees() {
		return nil, false
	}
	return appendPlain(msg)
}

// plainAgrees reports whether appendPlain writes what the SDK's encoder
// writes on this build, tried once on messages with every byte whose
// treatment an encoding/json could change (U+2028 and U+2029, which
// encoding/json/v2 escapes inside a raw value and json.Compact does not;
// HTML characters; invalid UTF-8; spacing). If it does not, the SDK's
// encoder writes every message, as it did before appendPlain.
var plainAgrees = sync.OnceValue(func() bool {
	id, _ := jsonrpc.MakeID(float64(7))
	raw := json.RawMessage(" {\"s\" : \"a\u2028b\u2029c<&>\xff\" , \"n\":[1, 2.50e1 ,null]} ")
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Request{ID: id, Method: "tools/call", Params: raw},
		&jsonrpc.Response{ID: id, Result: raw},
	} {
		got, ok := appendPlain(msg)
		want, err := jsonrpc.EncodeMessage(msg)
		if ok && (err != nil || !bytes.Equal(got, want)) {
			return false
		}
	}
	return true
})

// appendPlain is encodePlain without the check that it agrees with the
// SDK's encoder.
func appendPlain(msg jsonrpc.Message) ([]byte, bool) {
	var (
		id             jsonrpc.ID
		method         string
		params, result json.RawMessage
	)
	switch m := msg.(type) {
	case *jsonrpc.Request:
		id, method, params = m.ID, m.Method, m.Params
	case *jsonrpc.Response:
		if m.Error != nil {
			return nil, false
		}
		id, result = m.ID, m.Result
	default:
		return nil, false
	}
	if !plainText(method) {
		return nil, false
	}
	size := len(`{"jsonrpc":"2.0","id":"","method":"","params":,"result":}`) + 20 + len(method) + len(params) + len(result)
	if sid, ok := id.Raw().(string); ok {
		size += len(sid)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"jsonrpc":"2.0"`...)
	switch v := id.Raw().(type) {
	case nil: // a notification's
	case int64:
		b = append(b, `,"id":`...)
		b = strconv.AppendInt(b, v, 10)
	case string:
		if !plainText(v) {
			return nil, false
		}
		b = append(b, `,"id":"`...)
		b = append(b, v...)
		b = append(b, '"')
	default:
		return nil, false
	}
	if method != "" {
		b = append(b, `,"method":"`...)
		b = append(b, method...)
		b = append(b, '"')
	}
	for _, part := range []struct {
		key  string
		data json.RawMessage
	}{{`,"params":`, params}, {`,"result":`, result}} {
		if len(part.data) == 0 {
			continue
		}
		b = append(b, part.key...)
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, part.data); err != nil {
			return nil, false
		}
		b = buf.Bytes()
	}
	return append(b, '}'), true
}

// plainText reports whether encoding/json writes s as it is between its
// quotes: printable ASCII but for the quote and the backslash.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
