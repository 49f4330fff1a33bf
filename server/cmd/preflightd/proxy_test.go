package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestProxyFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  string // "" means valid
	}{
		{"http upstream", []string{"--upstream", "http://127.0.0.1:9/mcp"}, ""},
		{"stdio upstream", []string{"--budget-usd", "0.5", "--max-calls", "20", "--ttl", "10m", "--", "server", "--flag"}, ""},
		{"no upstream", []string{"--listen", ":0"}, "give --upstream URL or a command after --"},
		{"empty listen", []string{"--listen", "", "--upstream", "http://x/mcp"}, "--listen is empty"},
		{"both", []string{"--upstream", "http://x/mcp", "--", "server"}, "not both"},
		{"relative upstream", []string{"--upstream", "/mcp"}, "must be an absolute http(s) URL"},
		{"bad budget", []string{"--budget-usd", "-1", "--upstream", "http://x/mcp"}, "--budget-usd"},
		{"bad budget text", []string{"--budget-usd", "ten", "--upstream", "http://x/mcp"}, "--budget-usd"},
		{"negative calls", []string{"--max-calls", "-1", "--upstream", "http://x/mcp"}, "--max-calls"},
		{"fractional ttl", []string{"--ttl", "1500ms", "--upstream", "http://x/mcp"}, "whole number of seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseProxyFlags(tt.args, io.Discard)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := o.guardOptions(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			}
		})
	}
	o, _ := parseProxyFlags([]string{"--", "srv", "a", "b"}, io.Discard)
	if strings.Join(o.command, " ") != "srv a b" || o.ttl != 5*time.Minute {
		t.Fatalf("command %q, ttl %s", o.command, o.ttl)
	}
}

// TestBadOperationsFile: a bad --operations file stops the program at
// start (the proxy's tool-spec file and the server's catalog file alike),
// naming the file and counting its problems, each listed with its pointer.
func TestBadOperationsFile(t *testing.T) {
	const ops = `"provider", "name", "aliases", "schema", "effects", "annotations"`
	tests := []struct {
		name  string
		file  string
		proxy string // the proxy's error, after "--operations FILE: "
		serve string // the server's, when it differs
	}{
		{"unknown member next to a bad price", `{"operations":[{"provider":"mcp","name":"quote","priceUsd":"cheap","ttl":60}]}`,
			"2 problems (invalid_request):\n" +
				`  /operations/0/ttl: unknown member "ttl"; expected one of ` + ops + `, "priceUsd", "ttlSeconds", "retryCap" (unknown_field)` + "\n" +
				`  /operations/0/priceUsd: expected a number, found "cheap" (type)`,
			"2 problems (invalid_request):\n" +
				`  /operations/0/priceUsd: unknown member "priceUsd"; expected one of ` + ops + " (unknown_field)\n" +
				`  /operations/0/ttl: unknown member "ttl"; expected one of ` + ops + " (unknown_field)"},
		{"string price", `{"operations":[{"provider":"mcp","name":"quote","priceUsd":"cheap"}]}`,
			"1 problem (invalid_request):\n" +
				`  /operations/0/priceUsd: expected a number, found "cheap" (type)`,
			"1 problem (invalid_request):\n" +
				`  /operations/0/priceUsd: unknown member "priceUsd"; expected one of ` + ops + " (unknown_field)"},
		{"truncated", `{"operations":[`,
			"1 problem (invalid_json):\n" +
				"  /operations/0: expected a JSON value, found end of input (at byte 15) (invalid_json)", ""},
		{"duplicate member", `{"operations":[],"operations":[]}`,
			"1 problem (invalid_json):\n" +
				`  /operations: duplicate member name "operations" (at byte 17) (duplicate_key)`, ""},
		{"not an object", `[1]`,
			"1 problem (invalid_request):\n" +
				"  (the whole file): expected an object, found array (type)", ""},
		{"nested too deep", `{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
			"1 problem (limit_exceeded):\n" +
				"  /x" + strings.Repeat("/0", 511) + ": document is nested deeper than 512 levels (at byte 516) (max_depth)", ""},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ops.json")
			if err := os.WriteFile(file, []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			err := run(ctx, []string{"proxy", "--operations", file, "--upstream", "http://127.0.0.1:9/mcp"}, func(string) string { return "" }, io.Discard, io.Discard)
			if d := cmp.Diff("--operations "+file+": "+tt.proxy, fmt.Sprint(err)); d != "" {
				t.Errorf("proxy (-want +got):\n%s", d)
			}
			want := tt.serve
			if want == "" {
				want = tt.proxy
			}
			_, err = loadCatalog(file)
			if d := cmp.Diff("--operations "+file+": "+want, fmt.Sprint(err)); d != "" {
				t.Errorf("serve (-want +got):\n%s", d)
			}
		})
	}
}
