package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestProxyBadOperationsFile: a bad tool-spec file stops the proxy at
// start, every problem listed with its pointer.
func TestProxyBadOperationsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ops.json")
	os.WriteFile(file, []byte(`{"operations":[{"provider":"mcp","name":"quote","priceUsd":"cheap","ttl":60}]}`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"proxy", "--operations", file, "--upstream", "http://127.0.0.1:9/mcp"}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("the proxy started with a bad file")
	}
	for _, want := range []string{"--operations " + file, "/operations/0/ttl: unknown member", "priceUsd, ttlSeconds, retryCap"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	os.WriteFile(file, []byte(`{"operations":[{"provider":"mcp","name":"quote","priceUsd":"cheap"}]}`), 0o644)
	err = run(ctx, []string{"proxy", "--operations", file, "--upstream", "http://127.0.0.1:9/mcp"}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "/operations/0/priceUsd: expected a number") {
		t.Errorf("string price: %v", err)
	}
}
