package mcpproxy

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLineCap: over stdio, a line over the bound is skipped to its
// newline; one whose head names an id becomes that id's error, one that
// does not is dropped, and the lines around pass whole.
func TestLineCap(t *testing.T) {
	big := strings.Repeat("x", 300)
	in := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"result":{"text":"` + big + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"s","result":{"text":"` + big + `"}}` + "\n" +
		`{"jsonrpc":"2.0","result":{"text":"` + big + `"},"id":3}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n"
	l := &lineCap{r: bufio.NewReaderSize(strings.NewReader(in), 64), max: 100}
	out, err := io.ReadAll(l)
	if err != nil {
		t.Fatal(err)
	}
	msg := `"message":"preflight proxy: the upstream's result exceeds 100 bytes (--max-result-bytes); it was not read"`
	want := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,` + msg + `}}` + "\n" +
		`{"jsonrpc":"2.0","id":"s","error":{"code":-32000,` + msg + `}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n"
	if d := cmp.Diff(want, string(out)); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
}
