package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyApprovalKeyFlag: --approval-key reads a key file of at least
// 32 bytes (surrounding whitespace trimmed); a short, missing or huge file
// stops the start with an error naming the flag.
func TestProxyApprovalKeyFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "  "+strings.Repeat("k", 44)+"\n")
	for _, tc := range []struct {
		name, file, err string
	}{
		{"good", good, ""},
		{"short", write("short", strings.Repeat("k", 31)+"\n"), "holds 31 bytes; want at least 32"},
		{"huge", write("huge", strings.Repeat("k", 5000)), "larger than 4096 bytes"},
		{"missing", filepath.Join(dir, "none"), "--approval-key: stat "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseProxyFlags([]string{"--upstream", "http://127.0.0.1:9/mcp", "--approval-key", tc.file}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			g, err := o.guardOptions()
			if tc.err == "" {
				if err != nil || string(g.Approvals.Key) != strings.Repeat("k", 44) {
					t.Fatalf("key %q, %v", g.Approvals.Key, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// TestProxyApprovalKeyProblem: replicas sharing --store with tools that
// ask approval and no --approval-key get a configuration problem (an
// error under --strict): each would seal with a key of its own.
func TestProxyApprovalKeyProblem(t *testing.T) {
	ops := filepath.Join(t.TempDir(), "ops.json")
	if err := os.WriteFile(ops, []byte(`{"operations":[{"provider":"mcp","name":"rm","approval":"destructive"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		store, key string
		want       bool
	}{
		{"redis://127.0.0.1:6379", "", true},
		{"redis://127.0.0.1:6379", "key-file", false},
		{"", "", false},
	} {
		o, err := parseProxyFlags([]string{"--upstream", "http://127.0.0.1:9/mcp", "--operations", ops}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		g, err := o.guardOptions()
		if err != nil {
			t.Fatal(err)
		}
		o.store, o.approvalKey = tc.store, tc.key
		found := false
		for _, p := range startProblems(o, g) {
			found = found || p.code == "approval_key_per_process"
		}
		if found != tc.want {
			t.Errorf("store %q, key %q: approval_key_per_process reported %v, want %v", tc.store, tc.key, found, tc.want)
		}
	}
}
