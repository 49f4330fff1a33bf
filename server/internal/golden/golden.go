// Package golden compares test output with golden files, and owns the
// -update flag that rewrites them. Every test binary that imports it gets
// the flag; no test file declares its own.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files with the current output instead of comparing")

// Check compares got with the file at path and reports a difference as a
// test error with a diff (-want +got). With -update it writes got to path
// instead, creating the directory if needed.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
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

// Updating reports whether -update is set, for tests that write files
// golden.Check cannot compare, such as screenshots.
func Updating() bool { return *update }
