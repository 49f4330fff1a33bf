// Package mcpinterop proves the /mcp endpoint with a second, independent
// client: the official TypeScript MCP SDK (@modelcontextprotocol/sdk, version
// pinned in package.json and package-lock.json), driven by client.mjs against
// the real preflightd binary. See CONTRIBUTING.md.
package mcpinterop

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// requirement skips the test with a one-line reason when a prerequisite is
// missing on a developer machine, and fails it under CI=true, where .ci/run
// installs both.
func requirement(t *testing.T, format string, args ...any) {
	t.Helper()
	testpart.Missing(t, fmt.Sprintf(format, args...))
}

// TestTypeScriptClient builds ./server/cmd/preflightd, starts it on a free
// loopback port and runs client.mjs against its /mcp endpoint.
func TestTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		requirement(t, "node is not installed (%v); install Node.js 20 or newer, then run npm ci in server/interop/mcp", err)
	}
	if _, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		requirement(t, "server/interop/mcp/node_modules is missing (%v); run npm ci in server/interop/mcp", err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		requirement(t, "the go command is not on PATH (%v); it is needed to build preflightd", err)
	}

	// A guard against a hang (a server that never starts, a client that
	// never returns), not a timing assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "preflightd")
	build := exec.CommandContext(ctx, goTool, "build", "-o", bin, "github.com/agentpreflight/preflight/server/cmd/preflightd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build preflightd: %v\n%s", err, out)
	}

	addr, logs := startServer(ctx, t, bin)
	url := "http://" + addr + "/mcp"
	t.Logf("preflightd listening on %s", addr)

	client := exec.CommandContext(ctx, node, "client.mjs", url)
	out, err := client.CombinedOutput()
	t.Logf("node client.mjs %s:\n%s", url, out)
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\nserver log:\n%s", err, logs())
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("client.mjs exited 0 without reporting PASS")
	}
}

// listenAddr finds the loopback address in the server's startup log line,
// whatever its format (text or JSON slog, or plain).
var listenAddr = regexp.MustCompile(`(127\.0\.0\.1|\[::1\]):[1-9][0-9]*`)

// startServer runs bin (with args; none means the reference server on a free
// loopback port) and returns the address it
// logged and a function that returns everything it logged so far. The
// server is interrupted, and waited for, when the test ends.
func startServer(ctx context.Context, t *testing.T, bin string, args ...string) (string, func() string) {
	t.Helper()
	if len(args) == 0 {
		args = []string{"--addr", "127.0.0.1:0"}
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// Flags only: no PREFLIGHT_* setting of the environment (a payment
	// recipient, say) may change what is tested.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PREFLIGHT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start preflightd: %v", err)
	}
	var (
		mu  sync.Mutex
		log strings.Builder
	)
	logs := func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			log.WriteString(line + "\n")
			mu.Unlock()
			if m := listenAddr.FindString(line); m != "" {
				select {
				case found <- m:
				default:
				}
			}
		}
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); pw.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt) // an error only means it already exited
		<-exited
	})

	select {
	case addr := <-found:
		return addr, logs
	case <-exited:
		t.Fatalf("preflightd exited before logging its address: %v\n%s", waitErr, logs())
	case <-ctx.Done():
		t.Fatalf("preflightd logged no loopback address:\n%s", logs())
	}
	return "", nil
}
