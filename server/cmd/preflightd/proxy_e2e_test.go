package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyCommandScript runs `preflightd proxy --upstream URL` with a
// tool-spec file and budget flags, and drives the scripted session through
// it with the Go SDK client.
func TestProxyCommandScript(t *testing.T) {
	srv, counts := mcptest.NewServer("")
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()
	file := filepath.Join(t.TempDir(), "ops.json")
	os.WriteFile(file, []byte(`{"builtins":false,"operations":[{"provider":"mcp","name":"`+mcptest.Quote+`","priceUsd":`+mcptest.QuotePriceUSD+`}]}`), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"proxy", "--listen", "127.0.0.1:0", "--upstream", up.URL, "--operations", file,
			"--budget-usd", mcptest.ScriptBudgetUSD, "--max-calls", "100"}, func(string) string { return "" }, io.Discard, pw)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
	}()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/mcp"
	case <-time.After(30 * time.Second): // a guard against a hang
		t.Fatal("the proxy logged no address")
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "script", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url}, nil) // the SDK's preferred handshake: the proxy makes it fall back
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	t.Log(mcptest.RunScript(t, cs, counts.Snapshot))
}
