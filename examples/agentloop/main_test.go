package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files with the current output")

// checkGolden compares got with the file at path, or rewrites the file
// under -update.
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
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

func TestRunGolden(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"table", nil, "table.golden"},
		{"verbose", []string{"-v"}, "verbose.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), tt.args, &out); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tt.golden), out.Bytes())
		})
	}
}

func TestUSD(t *testing.T) {
	tests := []struct {
		micros int64
		want   string
	}{{0, "0"}, {5_000, "0.005"}, {1_000_000, "1"}, {1_234_500, "1.2345"}, {40_000, "0.04"}}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, string(usd(tt.micros))); diff != "" {
			t.Errorf("usd(%d) (-want +got):\n%s", tt.micros, diff)
		}
	}
}
