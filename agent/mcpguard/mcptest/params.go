package mcptest

import (
	"encoding/json"
	"reflect"
	"strings"
)

// ParamsCase is one tools/call params text and how a strict reader (the
// guard's) takes it: the tool and arguments, or Refused, a substring of
// its invalid-params message.
type ParamsCase struct {
	Name    string // what the case is
	Params  string // the params text
	Tool    string // the tool name a strict reader takes
	Args    string // the arguments a strict reader takes, as JSON; empty when none
	Refused string // a substring of the invalid-params message; empty when accepted
}

// ParamsCases are tools/call params as an attacker or a sloppy client
// sends them, with how a strict reader takes them.
var ParamsCases = []ParamsCase{
	{"plain", `{"name":"quote","arguments":{"symbol":"ACME"}}`, "quote", `{"symbol":"ACME"}`, ""},
	{"no arguments", `{"name":"quote"}`, "quote", ``, ""},
	{"null arguments", `{"name":"quote","arguments":null}`, "quote", `null`, ""},
	{"with _meta", `{"_meta":{"progressToken":7},"name":"quote","arguments":{}}`, "quote", `{}`, ""},
	{"escaped member name", `{"\u006eame":"quote","arguments":{}}`, "quote", `{}`, ""},
	{"escaped tool name", `{"name":"\u0071uote"}`, "quote", ``, ""},
	{"unknown member kept", `{"name":"quote","task":{"ttl":1}}`, "quote", ``, ""},
	{"same letters in different objects", `{"name":"quote","arguments":{"name":"x","q":{"Name":1}}}`, "quote", `{"name":"x","q":{"Name":1}}`, ""},

	// Issue 30, item 1: an extra member that encoding/json folds onto name.
	{"Name besides name", `{"name":"priced_write","Name":1,"arguments":{}}`, "", "", `the members "name" and "Name" of the object at the top level differ only in case`},
	// Issue 30, item 2: decided as one tool, run as another.
	{"NAME besides name", `{"name":"priced_write","NAME":"read_count","arguments":{}}`, "", "", `"name" and "NAME"`},
	{"ARGUMENTS besides arguments", `{"name":"search","arguments":{"q":"A"},"ARGUMENTS":{"q":"B"}}`, "", "", `"arguments" and "ARGUMENTS"`},
	{"_META besides _meta", `{"name":"q","_meta":{},"_Meta":{}}`, "", "", `"_meta" and "_Meta"`},
	{"Kelvin sign", `{"name":"q","arguments":{"k":1,"\u212a":2}}`, "", "", `of the object at /arguments differ only in case`},
	{"long s", `{"name":"q","argumentſ":{"a":1},"arguments":{}}`, "", "", `differ only in case`},
	{"only a case variant", `{"Name":"quote"}`, "", "", `the member "name" is missing`},
	{"case twins deep in arguments", `{"name":"q","arguments":{"a":[{"id":1,"ID":2}]}}`, "", "", `/arguments/a/0 differ only in case`},
	{"duplicate name", `{"name":"read_count","name":"priced_write"}`, "", "", `duplicate member name "name"`},
	{"duplicate argument", `{"name":"q","arguments":{"a":1,"a":2}}`, "", "", `duplicate member name "a"`},
	{"duplicate by escape", `{"name":"q","n\u0061me":"r"}`, "", "", `duplicate member name "name"`},
	{"lone surrogate", `{"name":"q\ud800"}`, "", "", `lone UTF-16 surrogate`},
	{"invalid UTF-8", "{\"name\":\"q\xff\"}", "", "", `UTF-8`},
	{"name a number", `{"name":7}`, "", "", `"name" must be a string, found number`},
	{"name null", `{"name":null}`, "", "", `"name" must be a string, found null`},
	{"params an array", `[{"name":"q"}]`, "", "", `must be a JSON object, found array`},
	{"params null", `null`, "", "", `must be a JSON object, found null`},
	{"no params", ``, "", "", `not strict JSON`},
	{"too deep", `{"name":"q","arguments":` + strings.Repeat(`[`, 1000) + strings.Repeat(`]`, 1000) + `}`, "", "", `deeper`},
}

// ParamsVariants returns the params of ParamsCases and, for the member
// names an attacker would play with, every spelling in every pairing: name,
// arguments and _meta in other cases, escaped, twice, and as Unicode case
// twins. A differential test reads each one with every reader.
func ParamsVariants() [][]byte {
	var out [][]byte
	for _, c := range ParamsCases {
		if json.Valid([]byte(c.Params)) {
			out = append(out, []byte(c.Params))
		}
	}
	names := []string{`"name"`, `"Name"`, `"NAME"`, `"nAmE"`, `"n\u0061me"`, `"na\u004de"`, `"name "`, `"\u212aname"`}
	argNames := []string{`"arguments"`, `"Arguments"`, `"ARGUMENTS"`, `"argumentſ"`, `"\u0061rguments"`}
	metaNames := []string{`"_meta"`, `"_META"`}
	tools := []string{`"priced_write"`, `"read_count"`}
	argVals := []string{`{"q":"A"}`, `{"q":"B"}`, `{"q":"A","Q":"B"}`, `{"Q":"B"}`, `null`, `[]`}
	for _, n := range names {
		for _, a := range argNames {
			for _, v := range argVals {
				out = append(out, []byte("{"+n+`:"priced_write",`+a+":"+v+"}"))
			}
		}
	}
	for _, n1 := range names {
		for _, n2 := range names {
			for i, a := range argNames {
				members := []string{n1 + `:` + tools[0], n2 + `:` + tools[1], a + `:` + argVals[i%len(argVals)], `"arguments":` + argVals[(i+1)%len(argVals)]}
				if n1 == n2 {
					members = members[1:]
				}
				for _, m := range metaNames {
					out = append(out, []byte("{"+strings.Join(append(members, m+`:{"progressToken":1}`), ",")+"}"))
				}
				out = append(out, []byte("{"+strings.Join(members, ",")+"}"))
				reversed := make([]string, len(members))
				for j, x := range members {
					reversed[len(members)-1-j] = x
				}
				out = append(out, []byte("{"+strings.Join(reversed, ",")+"}"))
			}
		}
	}
	return out
}

// CompareReading returns "" when the server behind r reads params as
// guard does, or guard refuses them, or the server refuses them (nothing
// runs); otherwise it says what differs. guard is the guard's reader,
// mcpguard.ReadCallParams.
func CompareReading(guard func(json.RawMessage) (string, json.RawMessage, error), r *ParamsReader, params []byte) string {
	name, args, err := guard(params)
	if err != nil {
		return "" // refused: nothing is forwarded
	}
	got, rerr := r.Read(params)
	if rerr != nil {
		return "the server did not answer " + string(params) + ": " + rerr.Error()
	}
	if got.Refused {
		return "" // the server refuses what the guard would forward: nothing runs
	}
	if got.Name != name {
		return "params " + string(params) + ": the server runs tool " + quote(got.Name) + ", the guard judged " + quote(name)
	}
	if !sameJSON(args, got.Arguments) {
		return "params " + string(params) + ": the server's arguments are " + string(got.Arguments) + ", the guard judged " + string(args)
	}
	return ""
}

// sameJSON compares two JSON texts as values (numbers as float64, as the
// SDKs' handlers see them); absent and null are the same.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if len(a) > 0 && json.Unmarshal(a, &va) != nil {
		return false
	}
	if len(b) > 0 && json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
