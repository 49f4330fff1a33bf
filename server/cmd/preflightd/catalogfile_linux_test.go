package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadCatalogFile: --operations reads a regular file of at most 4 MiB
// and refuses anything else at start, naming the flag and the limit,
// without reading past the limit or waiting on a FIFO.
func TestReadCatalogFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	atLimit := append([]byte(`{"operations":[]}`), bytes.Repeat([]byte(" "), maxCatalogFileBytes-17)...)
	atLimitFile := write("at-limit.json", atLimit)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "want a regular file of at most 4194304 bytes (4 MiB)"
	tests := []struct {
		name    string
		file    string
		wantLen int
		wantErr string
	}{
		{"exactly the limit", atLimitFile, maxCatalogFileBytes, ""},
		{"one byte over", write("over.json", append(atLimit, ' ')), 0, "is larger than 4194304 bytes; " + want},
		{"device that never ends", "/dev/zero", 0, "--operations /dev/zero is not a regular file (it is a device); " + want},
		{"FIFO", fifo, 0, "is not a regular file (it is a FIFO); " + want},
		{"directory", dir, 0, "is not a regular file (it is a directory); " + want},
		{"missing", filepath.Join(dir, "nope.json"), 0, "--operations: stat "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := readCatalogFile(tc.file)
			if tc.wantErr == "" {
				if err != nil || len(data) != tc.wantLen {
					t.Fatalf("read %d bytes, %v; want %d bytes", len(data), err, tc.wantLen)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	// The whole flag path: the 4 MiB file decodes as a catalog.
	o, err := parseFlags([]string{"--operations", atLimitFile}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.serverConfig(); err != nil {
		t.Errorf("catalog file of exactly the limit: %v", err)
	}
}
