package mcpguard

import (
	"encoding/json"
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
	v, perr := strictjson.Parse(params, strictjson.Limits{MaxDepth: maxParamsDepth})
	if perr != nil {
		return "", nil, invalidParams("tools/call params are not strict JSON: " + perr.Error())
	}
	if v.Kind() != strictjson.Object {
		return "", nil, invalidParams("tools/call params must be a JSON object, found " + v.Kind().String())
	}
	if at, a, b, ok := caseTwins(v, ""); ok {
		return "", nil, invalidParams("tools/call params: the members " + strconv.Quote(a) + " and " + strconv.Quote(b) +
			" of the object at " + pointerOrRoot(at) + " differ only in case; member names must be unambiguous")
	}
	n, ok := v.Get("name")
	if !ok {
		return "", nil, invalidParams(`tools/call params: the member "name" is missing; expected the tool's name as a string`)
	}
	if n.Kind() != strictjson.String {
		return "", nil, invalidParams(`tools/call params: "name" must be a string, found ` + n.Kind().String())
	}
	if a, ok := v.Get("arguments"); ok {
		args = json.RawMessage(a.Raw())
	}
	return n.Str(), args, nil
}

// caseTwins looks, depth first, for an object with two member names that
// fold to the same name, and returns the object's JSON Pointer and the two
// names.
func caseTwins(v strictjson.Value, at string) (string, string, string, bool) {
	switch v.Kind() {
	case strictjson.Object:
		seen := make(map[string]string, v.Len()) // folded name → name
		for it := v.Iter(); it.Next(); {
			k := it.Key()
			f := foldName(k)
			if prev, twin := seen[f]; twin {
				return at, prev, k, true
			}
			seen[f] = k
			if p, a, b, ok := caseTwins(it.Value(), at+"/"+strictjson.EscapePointerToken(k)); ok {
				return p, a, b, true
			}
		}
	case strictjson.Array:
		i := 0
		for it := v.Iter(); it.Next(); i++ {
			if p, a, b, ok := caseTwins(it.Value(), at+"/"+strconv.Itoa(i)); ok {
				return p, a, b, true
			}
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
