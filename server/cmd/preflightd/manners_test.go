package main

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentpreflight/preflight/server/internal/cli/clitest"
)

// TestMain lets clitest run this test binary as preflightd itself.
func TestMain(m *testing.M) {
	clitest.Hook(main)
	os.Exit(m.Run())
}

func TestHelpAndBadFlag(t *testing.T) {
	clitest.CheckManners(t, "preflightd", "addr", "base-url", "site-url", "pay-to", "network",
		"facilitator-url", "max-timeout-seconds", "mcp-trust-proxy-host")
	if stdout, _, _ := clitest.Run(t, "-h"); !strings.Contains(stdout, "\npreflightd proxy ") {
		t.Errorf("preflightd -h does not mention the proxy subcommand:\n%s", stdout)
	}
	stdout, stderr, code := clitest.Run(t, "proxy", "-h")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "usage:\n  preflightd proxy --listen ADDR") || !strings.Contains(stdout, "\n  -upstream URL") {
		t.Errorf("preflightd proxy -h: exit %d, stderr %q, stdout:\n%s\nwant the proxy's usage on stdout and exit 0", code, stderr, stdout)
	}
	_, stderr, code = clitest.Run(t, "proxy", "--no-such-flag")
	if code != 2 || stderr != "preflightd: proxy: flag provided but not defined: -no-such-flag\n"+proxyUsageLine+"\nRun 'preflightd proxy -h' for the flags.\n" {
		t.Errorf("preflightd proxy --no-such-flag: exit %d, stderr %q; want 2 and the proxy's usage line", code, stderr)
	}
	_, stderr, code = clitest.Run(t, "serve")
	if code != 2 || stderr != "preflightd: unexpected arguments [\"serve\"]\nusage: preflightd [flags]\nRun 'preflightd -h' for the flags.\n" {
		t.Errorf("preflightd serve: exit %d, stderr %q; want 2 and the usage line", code, stderr)
	}
	_, stderr, code = clitest.Run(t, "--base-url", "api.example.com")
	if code != 1 || !bytes.Contains([]byte(stderr), []byte("--base-url")) {
		t.Errorf("preflightd --base-url api.example.com: exit %d, stderr %q; want 1 naming the flag", code, stderr)
	}
}

func TestPrintWelcome(t *testing.T) {
	tests := []struct {
		name string
		addr net.Addr
		paid bool
		want string
	}{
		{"loopback, free", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, false,
			"preflightd is listening on http://127.0.0.1:8080; the tool-call route is free (no --pay-to).\n" +
				"  docs    http://127.0.0.1:8080/docs\n" +
				"  health  http://127.0.0.1:8080/health\n" +
				"  MCP     http://127.0.0.1:8080/mcp\n" +
				"Press Ctrl-C to stop. One JSON log line per request follows.\n"},
		{"every interface, paid", &net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}, true,
			"preflightd is listening on http://localhost:9000; the tool-call route asks for x402 payment.\n" +
				"  docs    http://localhost:9000/docs\n" +
				"  health  http://localhost:9000/health\n" +
				"  MCP     http://localhost:9000/mcp\n" +
				"Press Ctrl-C to stop. One JSON log line per request follows.\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printWelcome(&b, tc.addr, tc.paid)
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("welcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file is a terminal")
	}
}
