package server

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current responses")

// goldenHeaders are the response headers recorded in golden files; others
// (Date, Content-Length) vary or say nothing about the contract.
var goldenHeaders = []string{"Allow", "Connection", "Content-Type", "Link", "Payment-Required", "Payment-Response", "X-Content-Type-Options"}

// render writes an exchange as a golden file: the status line, the
// recorded headers in a fixed order, a blank line and the body.
func (x exchange) render() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "status: %d\n", x.Status)
	for _, h := range goldenHeaders {
		if vs := x.Header.Values(h); len(vs) > 0 {
			fmt.Fprintf(&b, "%s: %s\n", strings.ToLower(h), strings.Join(vs, ", "))
		}
	}
	b.WriteString("\n")
	b.Write(x.Body)
	if len(x.Body) > 0 && !bytes.HasSuffix(x.Body, []byte("\n")) {
		b.WriteString("\n")
	}
	return b.Bytes()
}

// checkGolden compares got with testdata/<name>.golden, or rewrites the
// file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "http", name+".golden")
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
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
