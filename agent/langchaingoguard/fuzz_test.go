package langchaingoguard_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/agent/langchaingoguard"
)

// FuzzArguments: whatever a tool is given, its call is decided by one
// JSON object that gives the input back unchanged: the input itself when
// it is one, else {"input": input}, or {"inputBase64": …} for bytes that
// are not UTF-8.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{"q":"alpha"}`, ` {"a":1} `, "alpha", "", `["x"]`, `{"q":`, "\xff", `{"a":1}{"b":2}`, "null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		args := langchaingoguard.Arguments(input)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			t.Fatalf("Arguments(%q) = %s, not a JSON object (%v)", input, args, err)
		}
		if !utf8.ValidString(input) {
			var enc struct{ InputBase64 string }
			if json.Unmarshal(args, &enc) != nil || len(obj) != 1 {
				t.Fatalf("Arguments(%q) = %s, want {\"inputBase64\": …}", input, args)
			}
			if got, err := base64.StdEncoding.DecodeString(enc.InputBase64); err != nil || string(got) != input {
				t.Fatalf("Arguments(%q) = %s, which does not give the input back", input, args)
			}
			return
		}
		t2 := bytes.TrimSpace([]byte(input))
		if len(t2) > 0 && t2[0] == '{' && json.Valid(t2) {
			if !bytes.Equal(args, t2) {
				t.Fatalf("Arguments(%q) = %s, want the object itself", input, args)
			}
			return
		}
		var wrapped struct{ Input *string }
		if json.Unmarshal(args, &wrapped) != nil || wrapped.Input == nil || len(obj) != 1 {
			t.Fatalf("Arguments(%q) = %s, want {\"input\": …}", input, args)
		}
		if *wrapped.Input != input {
			t.Fatalf("Arguments(%q) carries %q", input, *wrapped.Input)
		}
	})
}
