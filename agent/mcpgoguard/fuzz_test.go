package mcpgoguard_test

import (
	"encoding/json"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpgoguard"
)

// FuzzClassify: any bytes as a result are classified, without a panic,
// as one of the three outcomes, and only a result whose isError is true
// is a failure.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{`{"content":[{"type":"text","text":"ok"}]}`, `{"isError":true,"content":[{"type":"text","text":"HTTP 503"}]}`,
		`{"isError":true}`, `{"isError":"yes"}`, `[]`, `null`, ``, `{"isError":true,"content":[{"text":"422 Unprocessable Entity"}]}`,
		`{"isError":true,"content":"oops"}`, `{"isError":true,"content":[{"text":7},{"text":"HTTP 503"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		o := mcpgoguard.Classify("t", result, nil)
		var r struct {
			IsError bool `json:"isError"`
		}
		isError := json.Unmarshal(result, &r) == nil && r.IsError
		switch {
		case o != preflight.OutcomeSuccess && o != preflight.OutcomeTransientFailure && o != preflight.OutcomeTerminalFailure:
			t.Fatalf("Classify(%q) = %q", result, o)
		case isError == (o == preflight.OutcomeSuccess):
			t.Fatalf("Classify(%q) = %s, isError %v", result, o, isError)
		}
	})
}
