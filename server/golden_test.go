package server

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/golden"
)

// goldenHeaders are the response headers recorded in golden files; others
// (Date, Content-Length) vary or say nothing about the contract.
var goldenHeaders = []string{"Accept-Encoding", "Allow", "Connection", "Content-Type", "Link", "Payment-Required", "Payment-Response", "X-Content-Type-Options"}

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
	golden.Check(t, filepath.Join("testdata", "http", name+".golden"), got)
}
