package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShortRun builds the real binary and runs the whole program for about
// three seconds with four clients: it must pass (no 5xx, no connection
// errors, no wrong answers, a clean shutdown) and write its report.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"-duration", "3s", "-clients", "4", "-out", out}, &stdout); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	written, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, stdout.Bytes()) {
		t.Errorf("-out file differs from the printed report")
	}
	for _, want := range []string{"| verdict | PASS |", "| 5xx answers | 0 |", "| connection errors | 0 |", "| wrong answers (vs. the library in process) | 0 |", "| mcp |", "| oversized |"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestCasesAgreeWithLibrary checks the mix itself: every kind is present
// and every expected 200 body is a library result.
func TestCasesAgreeWithLibrary(t *testing.T) {
	cases, err := buildCases()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, c := range cases {
		kinds[c.kind]++
		if c.status == 200 && !c.mcpErr && c.kind != "health" && len(c.body200) == 0 {
			t.Errorf("%s: no expected body", c.name)
		}
	}
	for _, k := range []string{"valid", "invalid", "oversized", "mcp", "health"} {
		if kinds[k] == 0 {
			t.Errorf("the mix has no %s requests", k)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"-duration", "0s"}, {"-duration", "11m"}, {"-clients", "0"}, {"-requests", "0"}, {"extra"}} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestShortProxyRun runs the -mcp-proxy mode for about four seconds with
// three clients: no 5xx, no connection errors, no wrong answers, a clean
// proxy shutdown, and every kind of call in the report.
func TestShortProxyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"-mcp-proxy", "-duration", "4s", "-clients", "3"}, &stdout); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	for _, want := range []string{"| **direct, all** |", "| **proxied, all** |", "| proxied withheld |", "| proxied reuse (saved result) |", "Proxy shutdown: clean"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
}
