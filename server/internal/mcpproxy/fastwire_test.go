package mcpproxy

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// wireSeeds are bodies of every shape readWire takes or leaves.
var wireSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"market_quote","arguments":{"symbol":"S1"}}}`,
	` {"method":"tools/call" , "params" : {"name":"x","arguments":{"a":[1,-2.5e3,true,false,null,"\u00e9\n"]}},"id":"abc","jsonrpc":"2.0"} `,
	`{"jsonrpc":"2.0","id":-7,"result":{"content":[{"type":"text","text":"ok"}]}}`,
	`{"jsonrpc":"2.0","id":7,"result":{}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":1234567890123456,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{},"params":{"name":"y"}}`,
	`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{}}`,
	`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}} trailing`,
	`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}]`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"s":"\ud800"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"s":"` + "\xff" + `"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}`,
	`{"jsonrpc":"2.0","id":01,"method":"tools/call","params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":01}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1.}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":"x",}}`,
	`{}`,
}

// FuzzReadWire checks readWire against the SDK's decoder: whatever it
// takes, the SDK reads as the same message (kind, id, method, params or
// result byte for byte); what it leaves is the SDK's to read.
func FuzzReadWire(f *testing.F) {
	for _, s := range wireSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, ok := readWire(data)
		if !ok {
			return
		}
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			t.Fatalf("readWire took %q, which the SDK refuses: %v", data, err)
		}
		switch sdk := msg.(type) {
		case *jsonrpc.Request:
			if !m.hasMethod {
				t.Fatalf("readWire read %q as a response, the SDK as a request", data)
			}
			got := m.request()
			if got.ID != sdk.ID || got.Method != sdk.Method || !bytes.Equal(got.Params, sdk.Params) {
				t.Fatalf("%q: readWire read id %v method %q params %q; the SDK id %v method %q params %q",
					data, got.ID.Raw(), got.Method, got.Params, sdk.ID.Raw(), sdk.Method, sdk.Params)
			}
		case *jsonrpc.Response:
			if m.hasMethod {
				t.Fatalf("readWire read %q as a request, the SDK as a response", data)
			}
			if m.id != sdk.ID || sdk.Error != nil || !bytes.Equal(m.result, sdk.Result) {
				t.Fatalf("%q: readWire read id %v result %q; the SDK id %v result %q error %v",
					data, m.id.Raw(), m.result, sdk.ID.Raw(), sdk.Result, sdk.Error)
			}
		}
	})
}

func TestReadWire(t *testing.T) {
	id7, _ := jsonrpc.MakeID(float64(7))
	idABC, _ := jsonrpc.MakeID("abc")
	for _, c := range []struct {
		data string
		ok   bool
		id   jsonrpc.ID
	}{
		{wireSeeds[0], true, wireID(1)},
		{wireSeeds[1], true, idABC},
		{wireSeeds[3], true, id7},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{}}`, false, jsonrpc.ID{}},           // the SDK truncates it
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{}}`, false, jsonrpc.ID{}},             // another member
		{`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{}}`, false, jsonrpc.ID{}},            // an escape in method
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{},"params":{}}`, false, jsonrpc.ID{}}, // twice
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}} x`, false, jsonrpc.ID{}},           // trailing text
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":"x",}}`, false, jsonrpc.ID{}},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`, false, jsonrpc.ID{}},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{}}`, false, jsonrpc.ID{}}, // a notification
		{`{"id":1,"method":"tools/call","params":{}}`, false, jsonrpc.ID{}},          // no version
	} {
		m, ok := readWire([]byte(c.data))
		if ok != c.ok {
			t.Errorf("readWire(%s) took it: %v, want %v", c.data, ok, c.ok)
			continue
		}
		if ok {
			if diff := cmp.Diff(c.id.Raw(), m.id.Raw()); diff != "" {
				t.Errorf("readWire(%s) id (-want +got):\n%s", c.data, diff)
			}
		}
	}
}

func wireID(v float64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(v)
	return id
}

// FuzzEncodePlain checks encodePlain against the SDK's encoder: a
// message it takes comes out as the same bytes, and one the SDK cannot
// encode it does not take.
func FuzzEncodePlain(f *testing.F) {
	for _, s := range wireSeeds {
		if m, ok := readWire([]byte(s)); ok {
			f.Add(false, int64(3), "", m.method, []byte(m.params))
			f.Add(true, int64(3), "", "", []byte(m.result))
		}
	}
	f.Add(false, int64(-1), "", "tools/call", []byte(` { "a" : [ 1 , "<&>\u2028" ] } `))
	f.Add(false, int64(1<<53), "", "", []byte(nil))
	f.Add(false, int64(0), "", "notifications/cancelled", []byte(`null`))
	f.Add(false, int64(9), "", "caf\u00e9\"<\\", []byte(`{"s":"`+"\xe2\x80\xa8"+`"}`))
	f.Add(false, int64(9), "", "x", []byte(`{"a":1`))
	f.Add(true, int64(0), "abc", "", []byte(`{"content":[{"type":"text","text":"<b>"}]}`))
	f.Add(true, int64(0), "a\"b", "", []byte(`{}`))
	f.Add(true, int64(0), "\u00e9", "", []byte(nil))
	// Raw U+2028 and U+2029 with a plain method: the encoder writes them
	// as they are, as json.Compact does.
	f.Add(false, int64(5), "", "tools/call", []byte("{\"s\":\"a\u2028b\u2029c\"}"))
	f.Add(true, int64(-2), "", "", []byte("{\"s\":\"\u2028\"}")) // -2: the empty string id
	f.Fuzz(func(t *testing.T, response bool, n int64, sid, method string, data []byte) {
		// The id: a string when sid is set, and also for n == -2 (the empty
		// string); none for n == 0; else a number that a float64 keeps exact.
		var id jsonrpc.ID
		switch {
		case sid != "" || n == -2:
			id, _ = jsonrpc.MakeID(sid)
		case n != 0:
			id, _ = jsonrpc.MakeID(float64(n % (1 << 53)))
		}
		var msg jsonrpc.Message = &jsonrpc.Request{ID: id, Method: method, Params: data}
		if response {
			msg = &jsonrpc.Response{ID: id, Result: data}
		}
		got, ok := encodePlain(msg)
		want, err := jsonrpc.EncodeMessage(msg)
		switch {
		case ok && err != nil:
			t.Fatalf("encodePlain took %+v, which the SDK refuses: %v", msg, err)
		case ok && !bytes.Equal(got, want):
			t.Fatalf("encodePlain:\n%s\nthe SDK:\n%s", got, want)
		}
	})
}

// TestEncodePlainTakesTheDirectPath checks that the messages of the
// direct path, the request upstream and the answer of a call, are
// encoded without the SDK's encoder.
func TestEncodePlainTakesTheDirectPath(t *testing.T) {
	up, _ := jsonrpc.MakeID(float64(42))
	client, _ := jsonrpc.MakeID("call-7")
	for _, msg := range []jsonrpc.Message{
		&jsonrpc.Request{ID: up, Method: "tools/call", Params: json.RawMessage(`{"name":"market_quote","arguments":{"symbol":"S1"}}`)},
		&jsonrpc.Request{ID: up, Method: "tools/call", Params: json.RawMessage(` { "name" : "x" } `)},
		&jsonrpc.Response{ID: up, Result: json.RawMessage(`{"content":[{"type":"text","text":"{\"price\":1}"}]}`)},
		&jsonrpc.Response{ID: client, Result: json.RawMessage(`{"content":[]}`)},
	} {
		got, ok := encodePlain(msg)
		want, err := jsonrpc.EncodeMessage(msg)
		if !ok || err != nil || !bytes.Equal(got, want) {
			t.Errorf("%+v: encodePlain %q, %v; the SDK %q, %v", msg, got, ok, want, err)
		}
	}
	if _, ok := encodePlain(&jsonrpc.Response{ID: up, Error: &jsonrpc.Error{Code: 1, Message: "no"}}); ok {
		t.Error("encodePlain took an error response")
	}
	if !plainAgrees() {
		t.Error("the hand encoder disagrees with the SDK's on this build, so the direct path uses the SDK's")
	}
}
