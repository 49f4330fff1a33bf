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

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

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
			path := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
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
