package mcpguard

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/strictjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxParamsDepth is the deepest nesting ReadCallParams takes: the go-sdk
// refuses a message nested deeper than 1000 levels, and params sit two
// levels below the message.
const maxParamsDepth = 998

// ReadCallParams reads the params of a tools/call request the way MCP
// servers read them: member names matched exactly, "name" a string,
// "arguments" whatever value follows it (absent gives nil). It refuses,
// with a JSON-RPC invalid-params error (a *jsonrpc.Error) whose message
// says what was expected, params that two readers could take for
// different calls:
//
//   - text that is not one JSON object, or holds invalid UTF-8 or a lone
//     UTF-16 surrogate escape (decoders replace or keep them differently);
//   - an object anywhere with a member name twice (some decoders keep the
//     first, others the last);
//   - an object anywhere with two member names that differ only in case,
//     such as "name" and "Name" (encoding/json and decoders like it match
//     members case-insensitively, the SDKs exactly);
//   - nesting deeper than the Go SDK accepts.
//
// A proxy that forwards a call only after ReadCallParams accepted its
// params, and forwards those very bytes, runs the call it judged.
func ReadCallParams(params json.RawMessage) (name string, args json.RawMessage, err error) {
	c, err := readCall(params, false)
	return c.name, c.args, err
}

// CheckMessage returns an error, whose text says what it found, when
// the JSON-RPC message data could be read as different messages by two
// readers, by the rules ReadCallParams applies to params: text that is
// not one JSON value, invalid UTF-8 or a lone surrogate escape, a member
// name twice or two that differ only in case, anywhere in it. Nesting
// deeper than the Go SDK accepts (1000 levels) is an error too.
//
// A proxy that forwards a message as it came, and only after CheckMessage
// accepted it, forwards the message it read.
func CheckMessage(data []byte) error {
	v, err := strictjson.ParseScratch(data, strictjson.Limits{MaxDepth: maxParamsDepth + 2})
	if err != nil {
		return err
	}
	defer v.Release()
	if at, a, b, ok := caseTwins(v, ""); ok {
		return errors.New("the members " + strconv.Quote(a) + " and " + strconv.Quote(b) +
			" of the object at " + pointerOrRoot(at) + " differ only in case")
	}
	return nil
}

// callParams is what the guard reads from the params of a tools/call,
// parsed once.
type callParams struct {
	name string
	args json.RawMessage
	// canon is the params without _meta, keys sorted and numbers as
	// written, as encoding/json writes them (what callDigest hashes).
	canon []byte
	// retry: the params carry inputResponses or a requestState (a
	// multi-round-trip retry); state is their requestState, read as
	// encoding/json reads it ("" for none).
	retry bool
	state string
}

// readCall reads params as ReadCallParams does and, with all, the rest
// of callParams.
func readCall(params json.RawMessage, all bool) (callParams, error) {
	v, perr := strictjson.ParseScratch(params, strictjson.Limits{MaxDepth: maxParamsDepth})
	if perr != nil {
		return callParams{}, invalidParams("tools/call params are not strict JSON: " + perr.Error())
	}
	defer v.Release()
	if v.Kind() != strictjson.Object {
		return callParams{}, invalidParams("tools/call params must be a JSON object, found " + v.Kind().String())
	}
	if at, a, b, ok := caseTwins(v, ""); ok {
		return callParams{}, invalidParams("tools/call params: the members " + strconv.Quote(a) + " and " + strconv.Quote(b) +
			" of the object at " + pointerOrRoot(at) + " differ only in case; member names must be unambiguous")
	}
	n, ok := v.Get("name")
	if !ok {
		return callParams{}, invalidParams(`tools/call params: the member "name" is missing; expected the tool's name as a string`)
	}
	if n.Kind() != strictjson.String {
		return callParams{}, invalidParams(`tools/call params: "name" must be a string, found ` + n.Kind().String())
	}
	c := callParams{name: n.Str()}
	if a, ok := v.Get("arguments"); ok {
		c.args = json.RawMessage(a.Raw())
	}
	if !all {
		return c, nil
	}
	c.canon = appendMarshaled(make([]byte, 0, len(params)), v, "_meta")
	for it := v.Iter(); it.Next(); {
		k := it.Key()
		c.retry = c.retry || k == "inputResponses" || k == "requestState"
		// encoding/json matches member names case-insensitively; with no
		// case twins at most one member matches requestState.
		if strings.EqualFold(k, "requestState") && it.Value().Kind() == strictjson.String {
			c.state = it.Value().Str()
		}
	}
	return c, nil
}

// appendMarshaled appends v as encoding/json marshals it when decoded
// into an any with UseNumber (keys sorted, numbers as written, strings
// escaped as it escapes them), leaving out the top-level member named
// drop. v is strict JSON: valid UTF-8, no duplicate member names.
func appendMarshaled(dst []byte, v strictjson.Value, drop string) []byte {
	switch v.Kind() {
	case strictjson.Object:
		type member struct {
			k string
			v strictjson.Value
		}
		var small [8]member
		ms := small[:0]
		for it := v.Iter(); it.Next(); {
			if drop != "" && it.Key() == drop {
				continue
			}
			ms = append(ms, member{it.Key(), it.Value()})
		}
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.k, b.k) })
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendMarshaledString(dst, m.k)
			dst = append(dst, ':')
			dst = appendMarshaled(dst, m.v, "")
		}
		return append(dst, '}')
	case strictjson.Array:
		dst = append(dst, '[')
		i := 0
		for it := v.Iter(); it.Next(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendMarshaled(dst, it.Value(), "")
		}
		return append(dst, ']')
	case strictjson.String:
		return appendMarshaledString(dst, v.Str())
	default: // numbers as written, true, false, null
		return append(dst, v.Raw()...)
	}
}

// appendMarshaledString appends s, valid UTF-8, quoted as encoding/json
// quotes it (with its HTML escaping).
func appendMarshaledString(dst []byte, s string) []byte {
	dst, _ = strictjson.AppendEscaped(append(dst, '"'), s,
		strictjson.EscapeHTML|strictjson.EscapeLineSeparators|strictjson.ReplaceInvalidUTF8)
	return append(dst, '"')
}

// caseTwins looks, depth first, for an object with two member names that
// fold to the same name, and returns the object's JSON Pointer and the two
// names.
func caseTwins(v strictjson.Value, at string) (string, string, string, bool) {
	switch v.Kind() {
	case strictjson.Object:
		if v.Len() <= smallObject {
			return smallCaseTwins(v, at)
		}
		seen := make(map[string]string, v.Len()) // folded name → name
		for it := v.Iter(); it.Next(); {
			k := it.Key()
			f := foldName(k)
			if prev, twin := seen[f]; twin {
				return at, prev, k, true
			}
			seen[f] = k
			if !nested(it.Value()) {
				continue
			}
			if p, a, b, ok := caseTwins(it.Value(), at+"/"+strictjson.EscapePointerToken(k)); ok {
				return p, a, b, true
			}
		}
	case strictjson.Array:
		i := 0
		for it := v.Iter(); it.Next(); i++ {
			if !nested(it.Value()) {
				continue
			}
			if p, a, b, ok := caseTwins(it.Value(), at+"/"+strconv.Itoa(i)); ok {
				return p, a, b, true
			}
		}
	}
	return "", "", "", false
}

// nested reports whether v is an object or an array (where caseTwins
// looks further).
func nested(v strictjson.Value) bool {
	k := v.Kind()
	return k == strictjson.Object || k == strictjson.Array
}

// smallObject is the most members an object has for caseTwins to
// compare its names pairwise (no allocation) rather than by their folds.
const smallObject = 16

// smallCaseTwins is caseTwins for an object of at most smallObject
// members: the same answer, found by comparing each name with those
// before it (strings.EqualFold is equality of foldName).
func smallCaseTwins(v strictjson.Value, at string) (string, string, string, bool) {
	var names [smallObject]string
	n := 0
	for it := v.Iter(); it.Next(); {
		k := it.Key()
		for _, prev := range names[:n] {
			if strings.EqualFold(prev, k) {
				return at, prev, k, true
			}
		}
		names[n] = k
		n++
		if !nested(it.Value()) {
			continue
		}
		if p, a, b, ok := caseTwins(it.Value(), at+"/"+strictjson.EscapePointerToken(k)); ok {
			return p, a, b, true
		}
	}
	return "", "", "", false
}

// foldName folds s the way encoding/json matches member names to fields:
// two names match case-insensitively exactly when their folds are equal
// (the same test as strings.EqualFold, Kelvin sign and long s included).
func foldName(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(s)
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(fold(r))
	}
	return b.String()
}

// fold maps r to the smallest rune of its case-folding orbit, so that any
// two runes EqualFold treats as equal map to the same rune.
func fold(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

func invalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}
