package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeShowsCurlExamples keeps the README's curl examples identical to
// the ones TestBinaryEndToEnd runs.
func TestReadmeShowsCurlExamples(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "testdata", "curl-examples.sh"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(strings.TrimSpace(string(script)), "\n\n")
	for _, ex := range blocks[1:] {
		if !strings.Contains(string(readme), ex) {
			title, _, _ := strings.Cut(ex, "\n")
			t.Errorf("README.md does not show the curl example %q exactly as server/testdata/curl-examples.sh has it", title)
		}
	}
}
