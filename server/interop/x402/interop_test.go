// Package x402interop runs the official x402 npm client and facilitator
// code against preflight's paid decision route. See CONTRIBUTING.md.
package x402interop

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server/internal/testpart"
)

const (
	// payerKey is a fixed private key used only by this test; its address
	// holds nothing on any real chain. The stubbed chain funds it.
	payerKey     = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcaf784d7bf4f2ff80"
	payerAddress = "0x500d75F1329cf98352c32Cf238c2192ca78faFFE"
	payTo        = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
)

// TestX402Interop builds preflightd, starts facilitator.mjs (official
// facilitator code, stubbed chain) and runs client.mjs (official fetch
// client) against it, all on 127.0.0.1.
func TestX402Interop(t *testing.T) {
	requireNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	bin := buildServer(t)
	facURL := startFacilitator(ctx, t)
	serverURL := startServer(ctx, t, bin, facURL)

	cmd := exec.CommandContext(ctx, "node", "--test", "--test-concurrency=1", "client.mjs")
	cmd.Env = append(os.Environ(),
		"SERVER_URL="+serverURL, "FACILITATOR_URL="+facURL, "PAY_TO="+payTo, "PAYER_KEY="+payerKey)
	out, err := cmd.CombinedOutput()
	t.Logf("client.mjs output:\n%s", out)
	if err != nil {
		t.Fatalf("client.mjs failed: %v", err)
	}
}

// requireNode skips with a one-line reason when node or the npm packages
// are missing, except under CI=true, where that is a failure.
func requireNode(t *testing.T) {
	t.Helper()
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat("node_modules/@x402/fetch"); err != nil {
		missing = "server/interop/x402/node_modules is missing (run `npm ci` in server/interop/x402)"
	}
	if missing == "" {
		return
	}
	testpart.Missing(t, missing)
}

// buildServer builds the real server binary, server/cmd/preflightd.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "preflightd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/agentpreflight/preflight/server/cmd/preflightd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build server/cmd/preflightd: %v\n%s", err, out)
	}
	return bin
}

// startFacilitator starts facilitator.mjs and returns its URL.
func startFacilitator(ctx context.Context, t *testing.T) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", "facilitator.mjs")
	cmd.Env = append(os.Environ(), "PAYER_ADDRESS="+payerAddress, "PAY_TO="+payTo)
	cmd.Stderr = &logWriter{t: t, prefix: "facilitator: "}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("facilitator.mjs exited before listening: %v", sc.Err())
	}
	url, ok := strings.CutPrefix(sc.Text(), "listening ")
	if !ok {
		t.Fatalf("facilitator.mjs printed %q, want \"listening URL\"", sc.Text())
	}
	go func() { // keep draining so the process never blocks on stdout
		for sc.Scan() {
		}
	}()
	return url
}

// startServer runs the server binary on a free loopback port and waits
// until GET /health answers.
func startServer(ctx context.Context, t *testing.T, bin, facURL string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	base := "http://" + addr
	cmd := exec.CommandContext(ctx, bin, "--addr", addr, "--base-url", base,
		"--pay-to", payTo, "--network", "eip155:8453", "--facilitator-url", facURL)
	cmd.Stdout = &logWriter{t: t, prefix: "server: "}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })

	for range 200 { // a readiness wait, not a timing assertion
		select {
		case err := <-exited:
			t.Fatalf("server exited before it was ready: %v", err)
		default:
		}
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server at %s never answered GET /health", base)
	return ""
}

// logWriter forwards a child process's output to the test log.
type logWriter struct {
	t      *testing.T
	prefix string
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s%s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
