package preflight

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files with the current output instead of comparing")

// checkGolden compares got with the golden file at path and reports a
// difference as a diff (-want +got); with -update it writes got there.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run '%s' -update to create it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

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
				checkGolden(t, strings.TrimSuffix(in, ".json")+".golden", got)
			})
		}
	}
}
