package preflight

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/internal/golden"
)

// respond returns what the reference server would answer: the result or the
// error envelope, as JSON.
func respond(t *testing.T, kind string, data []byte) []byte {
	t.Helper()
	var (
		v   any
		err error
	)
	switch kind {
	case "check":
		v, err = checkBytes(data)
	case "decide":
		v, err = decideBytes(data)
	}
	if err != nil {
		v = err
	}
	out, merr := json.MarshalIndent(v, "", "  ")
	if merr != nil {
		t.Fatalf("marshal: %v", merr)
	}
	return append(out, '\n')
}

// TestGolden compares whole responses for the requests under
// testdata/check and testdata/decide with their .golden files.
func TestGolden(t *testing.T) {
	for _, kind := range []string{"check", "decide"} {
		inputs, err := filepath.Glob(filepath.Join("testdata", kind, "*.json"))
		if err != nil || len(inputs) == 0 {
			t.Fatalf("no inputs for %s: %v", kind, err)
		}
		for _, in := range inputs {
			name := kind + "/" + strings.TrimSuffix(filepath.Base(in), ".json")
			t.Run(name, func(t *testing.T) {
				data, err := os.ReadFile(in)
				if err != nil {
					t.Fatal(err)
				}
				got := respond(t, kind, data)
				if again := respond(t, kind, data); string(again) != string(got) {
					t.Fatalf("same input gave different output")
				}
				golden.Check(t, strings.TrimSuffix(in, ".json")+".golden", got)
			})
		}
	}
}
