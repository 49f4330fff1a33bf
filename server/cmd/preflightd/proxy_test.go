package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/server/internal/cli"
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
		{"zero sessions", []string{"--max-sessions", "0", "--upstream", "http://x/mcp"}, "--max-sessions 0 must be 1 or more"},
		{"zero per client", []string{"--max-sessions-per-client", "0", "--upstream", "http://x/mcp"}, "--max-sessions-per-client 0 must be 1 or more"},
		{"zero processes", []string{"--max-processes", "0", "--", "srv"}, "--max-processes 0 must be 1 or more"},
		{"processes with an HTTP upstream", []string{"--max-processes", "4", "--upstream", "http://x/mcp"}, "--max-processes applies to a command upstream"},
		{"zero init timeout", []string{"--session-init-timeout", "0s", "--upstream", "http://x/mcp"}, "--session-init-timeout 0s is out of range"},
		{"init timeout typo", []string{"--session-init-timeout", "30h", "--upstream", "http://x/mcp"}, "--session-init-timeout 30h0m0s is out of range"},
		{"zero body timeout", []string{"--body-timeout", "0s", "--upstream", "http://x/mcp"}, "--body-timeout 0s is out of range"},
		{"origin with a path", []string{"--allow-origin", "https://app.example.com/x", "--upstream", "http://x/mcp"}, "is not an origin"},
		{"origin without scheme", []string{"--allow-origin", "app.example.com", "--upstream", "http://x/mcp"}, "is not an origin"},
		{"null origin", []string{"--allow-origin", "null", "--upstream", "http://x/mcp"}, "is not an origin"},
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

// TestProxyBoundFlags: the bounds' defaults, and how the flags set them.
func TestProxyBoundFlags(t *testing.T) {
	type bounds struct {
		MaxSessions, PerClient, MaxProcesses int
		InitTimeout, BodyTimeout             time.Duration
		AllowOrigins                         []string
	}
	tests := []struct {
		name string
		args []string
		want bounds
	}{
		{"http upstream defaults", []string{"--upstream", "http://x/mcp"},
			bounds{1000, 100, 0, 30 * time.Second, 10 * time.Second, nil}},
		{"command upstream defaults: processes bounded", []string{"--", "srv"},
			bounds{1000, 100, 32, 30 * time.Second, 10 * time.Second, nil}},
		{"every bound set", []string{"--max-sessions", "50", "--max-sessions-per-client", "5", "--max-processes", "3",
			"--session-init-timeout", "2s", "--body-timeout", "500ms", "--", "srv"},
			bounds{50, 5, 3, 2 * time.Second, 500 * time.Millisecond, nil}},
		{"origins repeated and listed, normalized", []string{"--allow-origin", "https://App.Example.com:443",
			"--allow-origin", "http://localhost:3000, HTTP://[::1]:80", "--upstream", "http://x/mcp"},
			bounds{1000, 100, 0, 30 * time.Second, 10 * time.Second,
				[]string{"https://app.example.com", "http://localhost:3000", "http://[::1]"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseProxyFlags(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			got := bounds{o.maxSessions, o.perClient, o.maxProcesses, o.initTimeout, o.bodyTimeout, o.allowOrigins}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("bounds (-want +got):\n%s", d)
			}
		})
	}
}

// TestProxyBudgetFlag: --budget-usd follows the guard's own rule (a
// non-negative JSON number), so a value that starts the proxy is one every
// session's guard accepts, and a bad one stops it at start with a usage
// error instead of failing every initialize.
func TestProxyBudgetFlag(t *testing.T) {
	tests := []struct {
		value string
		ok    bool
	}{
		{"0.20", true},
		{"5", true},
		{"0", true},
		{"1e3", true}, // a JSON number: 1000
		{"NaN", false},
		{"Inf", false},
		{"+Inf", false},
		{".5", false},
		{"5.", false},
		{"0x1p-2", false},
		{"1_000", false},
		{"-1", false},
		{"+1", false},
		{"01", false},
		{" 1", false},
		{"1e31", false}, // past the guard's bound
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			_, err := parseProxyFlags([]string{"--budget-usd", tt.value, "--upstream", "http://x/mcp"}, io.Discard)
			_, guardErr := agent.NewGuard(nil, &agent.GuardOptions{BudgetUSD: json.Number(tt.value)})
			if (err == nil) != tt.ok || (guardErr == nil) != tt.ok {
				t.Fatalf("flag error %v, guard error %v; want accepted=%v by both", err, guardErr, tt.ok)
			}
			if err == nil {
				return
			}
			if !errors.As(err, new(*cli.UsageError)) {
				t.Errorf("error %T, want a *cli.UsageError (exit 2)", err)
			}
			want := `proxy: --budget-usd "` + tt.value + `" must be a non-negative decimal below 1e30 written as a JSON number, such as 5, 0.50 or 1e3 (no NaN, Inf, leading dot, hex or underscores)`
			if d := cmp.Diff(want, err.Error()); d != "" {
				t.Errorf("message (-want +got):\n%s", d)
			}
		})
	}
}

// TestBadOperationsFile: a bad --operations file stops the program at
// start (the proxy and the server read one format alike),
// naming the file and counting its problems, each listed with its pointer.
func TestBadOperationsFile(t *testing.T) {
	const ops = `"provider", "name", "aliases", "schema", "effects", "annotations", "assertFormat"`
	tests := []struct {
		name  string
		file  string
		proxy string // the proxy's error, after "--operations FILE: "
		serve string // the server's, when it differs
	}{
		// One format: the server reads the proxy's members as the proxy
		// does (and leaves them to it).
		{"unknown member next to a bad price", `{"operations":[{"provider":"mcp","name":"quote","priceUsd":"cheap","ttl":60}]}`,
			"2 problems (invalid_request):\n" +
				`  /operations/0/ttl: unknown member "ttl"; expected one of ` + ops + `, "priceUsd", "ttlSeconds", "retryCap", "idempotencySeconds", "approval" (unknown_field)` + "\n" +
				`  /operations/0/priceUsd: expected a number, found "cheap" (type)`, ""},
		{"string price", `{"operations":[{"provider":"mcp","name":"quote","priceUsd":"cheap"}]}`,
			"1 problem (invalid_request):\n" +
				`  /operations/0/priceUsd: expected a number, found "cheap" (type)`, ""},
		{"truncated", `{"operations":[`,
			"1 problem (invalid_json):\n" +
				"  /operations/0: expected a JSON value, found end of input (invalid_json)", ""},
		{"duplicate member", `{"operations":[],"operations":[]}`,
			"1 problem (invalid_json):\n" +
				`  /operations: duplicate member name "operations" (duplicate_key)`, ""},
		{"not an object", `[1]`,
			"1 problem (invalid_request):\n" +
				"  (the whole file): expected an object, found array (type)", ""},
		{"nested too deep", `{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
			"1 problem (limit_exceeded):\n" +
				"  /x" + strings.Repeat("/0", 511) + ": document is nested deeper than 512 levels (max_depth)", ""},
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

// TestProxyStoreFlag: a --store value is a redis:// or postgres:// URL;
// a mistake names the flag and what was expected, and never repeats a
// password.
func TestProxyStoreFlag(t *testing.T) {
	tests := []struct {
		store string
		err   string // "" means valid
	}{
		{"redis://127.0.0.1:6379/0", ""},
		{"rediss://user:s3cret-pw@cache.internal:6380", ""},
		{"postgres://app:s3cret-pw@db.internal/preflight?sslmode=require", ""},
		{"postgresql://app@db.internal:5433/preflight", ""},
		{"redis+cluster://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000", ""},
		{"rediss+cluster://user:s3cret-pw@cache.internal:7000", ""},
		{"redis+sentinel://10.0.0.1:26379", `--store has the scheme "redis+sentinel"; want redis://`},
		{"mysql://app:s3cret-pw@db.internal/x", `--store has the scheme "mysql"; want redis://`},
		{"127.0.0.1:6379", "--store is not a URL with a host; want redis://"},
		{"redis:s3cret-pw", "--store is not a URL with a host"},
		{"redis://u:s3cret-pw@host:port/0", "--store is not a URL with a host"},
		{"redis:///0", "--store is not a URL with a host"},
	}
	for _, tt := range tests {
		t.Run(tt.store, func(t *testing.T) {
			_, err := parseProxyFlags([]string{"--store", tt.store, "--upstream", "http://127.0.0.1:9/mcp"}, io.Discard)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Fatalf("error %q repeats the password", err)
			}
		})
	}
}
