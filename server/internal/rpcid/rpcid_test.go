package rpcid

import (
	"encoding/json"
	"testing"
)

func TestSafe(t *testing.T) {
	for _, tt := range []struct {
		id   string
		safe bool
	}{
		{``, true}, {`"x"`, true}, {`null`, true}, {`0`, true}, {`-0`, false}, {`42`, true},
		{`9007199254740991`, true}, {`-9007199254740991`, true},
		{`9007199254740992`, false}, {`9007199254740993`, false}, {`99999999999999999999999`, false},
		{`1.5`, false}, {`1.0`, false}, {`1e2`, false}, {`1e400`, false}, {`0009`, false},
		{`true`, false}, {`{}`, false}, {`[]`, false},
	} {
		if got := Safe(json.RawMessage(tt.id)); got != tt.safe {
			t.Errorf("Safe(%s) = %t, want %t", tt.id, got, tt.safe)
		}
	}
}

func TestFirstUnsafe(t *testing.T) {
	for _, tt := range []struct {
		body, id string
		bad      bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, ``, false},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `1.5`, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ``, false},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":true,"method":"ping"}]`, `true`, true},
		{`not json`, ``, false},
		// The SDK reads the member named exactly "id"; a case twin does
		// not hide it.
		{`{"jsonrpc":"2.0","id":1.5,"ID":1,"method":"ping"}`, `1.5`, true},
		{`{"jsonrpc":"2.0","Id":7,"id":9223372036854775808,"method":"ping"}`, `9223372036854775808`, true},
		{`{"jsonrpc":"2.0","Id":1.5,"id":1,"method":"ping"}`, ``, false},
		{`[{"jsonrpc":"2.0","id":true,"ID":1,"method":"ping"}]`, `true`, true},
	} {
		id, bad := FirstUnsafe([]byte(tt.body))
		if bad != tt.bad || bad && string(id) != tt.id {
			t.Errorf("FirstUnsafe(%s) = %s, %t; want %s, %t", tt.body, id, bad, tt.id, tt.bad)
		}
	}
	if got := string(Echo(json.RawMessage(`1.5`))); got != `1.5` {
		t.Errorf("Echo(1.5) = %s", got)
	}
	if got := string(Echo(json.RawMessage(`true`))); got != `null` {
		t.Errorf("Echo(true) = %s", got)
	}
}
