package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyCommandScript runs `preflightd proxy --upstream URL` with a
// tool-spec file and budget flags, and drives the scripted session through
// it with the Go SDK client.
func TestProxyCommandScript(t *testing.T) {
	up, counts := countingUpstream(t)
	base, _ := startProxyCommand(t, "--upstream", up, "--operations", quoteOps(t),
		"--budget-usd", mcptest.ScriptBudgetUSD, "--max-calls", "100")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "script", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil) // the SDK's preferred handshake: the proxy makes it fall back
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	t.Log(mcptest.RunScript(t, cs, counts.Snapshot))
}

// quoteOps writes a tool-spec file that prices mcptest.Quote alone, at
// mcptest.QuotePriceUSD, and returns its path.
func quoteOps(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ops.json")
	spec := `{"builtins":false,"operations":[{"provider":"mcp","name":"` + mcptest.Quote + `","priceUsd":` + mcptest.QuotePriceUSD + `}]}`
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// startProxyCommand runs `preflightd proxy --listen 127.0.0.1:0 args…` in
// the test's process until the test ends, and returns its base URL and its
// log.
func startProxyCommand(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	log := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...), func(string) string { return "" }, io.Discard, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a, log
	case <-time.After(30 * time.Second): // a guard against a hang
		t.Fatalf("the proxy logged no address:\n%s", log)
	}
	return "", nil
}

// syncBuffer is a log both a proxy and the test use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
