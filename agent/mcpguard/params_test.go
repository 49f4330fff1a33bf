package mcpguard_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestReadCallParams(t *testing.T) {
	for _, tt := range mcptest.ParamsCases {
		t.Run(tt.Name, func(t *testing.T) {
			name, args, err := mcpguard.ReadCallParams(json.RawMessage(tt.Params))
			if tt.Refused != "" {
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, tt.Refused) {
					t.Fatalf("ReadCallParams(%s) = %q, %s, %v; want an invalid-params error saying %q", tt.Params, name, args, err, tt.Refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadCallParams(%s): %v", tt.Params, err)
			}
			if d := cmp.Diff(tt.Tool+" "+tt.Args, name+" "+string(args)); d != "" {
				t.Errorf("name and arguments (-want +got):\n%s", d)
			}
		})
	}
}

// TestReadCallParamsAsGoSDK: for every case, the go-sdk server reads the
// same tool and arguments as ReadCallParams, or ReadCallParams refuses the
// params. (The TypeScript SDK's reading is compared in server/interop/mcp.)
func TestReadCallParamsAsGoSDK(t *testing.T) {
	r, stop, err := mcptest.GoSDKParamsReader()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, tt := range mcptest.ParamsCases {
		if !json.Valid([]byte(tt.Params)) {
			continue // the transport refuses the whole message before any server reads params
		}
		t.Run(tt.Name, func(t *testing.T) {
			if msg := mcptest.CompareReading(mcpguard.ReadCallParams, r, []byte(tt.Params)); msg != "" {
				t.Error(msg)
			}
		})
	}
	variants := mcptest.ParamsVariants()
	for _, params := range variants {
		if msg := mcptest.CompareReading(mcpguard.ReadCallParams, r, params); msg != "" {
			t.Error(msg)
		}
	}
	t.Logf("%d params (the cases and spellings of their members) read alike or refused", len(variants))
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
	for _, tt := range mcptest.ParamsCases {
		f.Add([]byte(tt.Params))
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
		if msg := mcptest.CompareReading(mcpguard.ReadCallParams, r, params); msg != "" {
			t.Error(msg)
		}
	})
}

// TestCheckMessage: a message is refused when two readers could take it
// for different messages, at any level; params that CheckMessage refuses
// ReadCallParams refuses too.
func TestCheckMessage(t *testing.T) {
	for _, tt := range []struct{ name, msg, refused string }{
		{"plain", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q","arguments":{"s":"A"}}}`, ""},
		{"member twice at the top", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, `duplicate member name "method"`},
		{"case twins at the top", `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"initialize"}`, `"method" and "Method" of the object at the top level`},
		{"case twins deep", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q","arguments":{"a":[{"k":1,"K":2}]}}}`, `of the object at /params/arguments/a/0`},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}", `UTF-8`},
		{"lone surrogate", `{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, `surrogate`},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, `after`},
		{"nested 1001 levels", strings.Repeat("[", 1001) + strings.Repeat("]", 1001), `deeper than 1000`},
	} {
		err := mcpguard.CheckMessage([]byte(tt.msg))
		switch {
		case tt.refused == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
			t.Errorf("%s: %v; want an error saying %q", tt.name, err, tt.refused)
		}
	}
	for _, tt := range mcptest.ParamsCases {
		msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tt.Params + `}`
		if err := mcpguard.CheckMessage([]byte(msg)); err != nil && tt.Refused == "" {
			t.Errorf("%s: CheckMessage refuses params ReadCallParams takes: %v", tt.Name, err)
		}
	}
}
