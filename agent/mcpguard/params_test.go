package mcpguard_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/internal/mcptest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// paramsCases are tools/call params as an attacker or a sloppy client
// sends them. want is the name and arguments ReadCallParams reads, or
// refused: the substring of its invalid-params message.
var paramsCases = []struct {
	name    string
	params  string
	tool    string
	args    string
	refused string
}{
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

func TestReadCallParams(t *testing.T) {
	for _, tt := range paramsCases {
		t.Run(tt.name, func(t *testing.T) {
			name, args, err := mcpguard.ReadCallParams(json.RawMessage(tt.params))
			if tt.refused != "" {
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, tt.refused) {
					t.Fatalf("ReadCallParams(%s) = %q, %s, %v; want an invalid-params error saying %q", tt.params, name, args, err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadCallParams(%s): %v", tt.params, err)
			}
			if d := cmp.Diff(tt.tool+" "+tt.args, name+" "+string(args)); d != "" {
				t.Errorf("name and arguments (-want +got):\n%s", d)
			}
		})
	}
}

// TestReadCallParamsAsGoSDK: for every case, the go-sdk server reads the
// same tool and arguments as ReadCallParams, or ReadCallParams refuses the
// params. (The TypeScript SDK's reading is compared in interop/mcp.)
func TestReadCallParamsAsGoSDK(t *testing.T) {
	r, stop, err := mcptest.GoSDKParamsReader()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, tt := range paramsCases {
		if !json.Valid([]byte(tt.params)) {
			continue // the transport refuses the whole message before any server reads params
		}
		t.Run(tt.name, func(t *testing.T) {
			if msg := SameReading(r, []byte(tt.params)); msg != "" {
				t.Error(msg)
			}
		})
	}
	// The comparison has teeth: the SDK runs params the guard refuses, and
	// reads them otherwise than encoding/json does.
	disguised := []byte(`{"name":"priced_write","NAME":"read_count","arguments":{}}`)
	got, err := r.Read(disguised)
	if err != nil || got.Refused || got.Name != "priced_write" {
		t.Fatalf("go-sdk read %s as %+v, %v; want it run as priced_write", disguised, got, err)
	}
	var naive struct{ Name string }
	json.Unmarshal(disguised, &naive)
	if naive.Name != "read_count" {
		t.Fatalf("encoding/json read the name %q; want read_count (the disguise)", naive.Name)
	}
}

// FuzzReadCallParams: ReadCallParams never reads params differently from
// the go-sdk server; where they would differ, it refuses them.
func FuzzReadCallParams(f *testing.F) {
	for _, tt := range paramsCases {
		f.Add([]byte(tt.params))
	}
	r, stop, err := mcptest.GoSDKParamsReader()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(stop)
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) || len(params) > 1<<16 {
			return
		}
		if msg := SameReading(r, params); msg != "" {
			t.Error(msg)
		}
	})
}

// SameReading returns "" when the server behind r reads params as
// ReadCallParams does (or ReadCallParams refuses them), else what differs.
func SameReading(r *mcptest.ParamsReader, params []byte) string {
	name, args, err := mcpguard.ReadCallParams(params)
	if err != nil {
		return "" // refused: nothing is forwarded
	}
	got, rerr := r.Read(params)
	if rerr != nil {
		return "the server did not answer " + string(params) + ": " + rerr.Error()
	}
	if got.Refused {
		return "" // the server refuses what the proxy would forward: nothing runs
	}
	if got.Name != name {
		return "params " + string(params) + ": the server runs tool " + strconvQuote(got.Name) + ", the guard judged " + strconvQuote(name)
	}
	if !sameJSON(args, got.Arguments) {
		return "params " + string(params) + ": the server's arguments are " + string(got.Arguments) + ", the guard judged " + string(args)
	}
	return ""
}

// sameJSON compares two JSON texts as values (numbers as float64, as
// both SDKs' handlers see them); nil and null are the same.
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

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
