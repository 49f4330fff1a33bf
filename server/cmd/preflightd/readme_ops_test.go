//go:build unix

package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// The operations commands the documents show: the guarding proxy in front
// of an HTTP MCP server (README.md) and of a stdio one (the guide's proxy
// section), and the paid server and the server with metrics and tracing
// (preflightd's package doc, doc.go). The tests run them as written but
// for the addresses (a free port instead of 8090, 3001, 4318 and 9464),
// the catalog file (the guide's own, saved in a temporary directory) and
// npx, which is pointed at the pinned server-everything in
// server/interop/mcp/node_modules rather than the network. A command of doc.go
// starts with preflightd; it is run as go run ./server/cmd/preflightd.
const (
	readmeProxyHTTP    = "go run ./server/cmd/preflightd proxy --listen 127.0.0.1:8090 --upstream http://127.0.0.1:3001/mcp --budget-usd 2 --max-calls 50"
	readmeProxyStdio   = "go run ./server/cmd/preflightd proxy --listen 127.0.0.1:8090 --operations tools.json -- npx -y @modelcontextprotocol/server-everything@2026.8.31"
	readmePaid         = `preflightd --base-url https://api.example.com --pay-to "$PAY_TO" --network eip155:84532 --facilitator-url https://facilitator.example.com`
	readmeTraced       = "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=preflight-eu1 preflightd --metrics-addr 127.0.0.1:9464"
	readmeOverhead     = "(cd benchmarks && go run ./cmd/overhead -rounds 6 -duration 2s)"
	readmeProxyListen  = "--listen 127.0.0.1:8090"
	readmeUpstreamAddr = "127.0.0.1:3001"
	readmeQuoteTool    = "market_quote" // a read-only tool of agent/mcpguard/mcptest
)

// docCommand requires preflightd's package doc (doc.go) to show command
// on a code line of its own and returns it as run from a checkout.
func docCommand(t *testing.T, command string) string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		if strings.TrimPrefix(line, "//\t") == command {
			return strings.Replace(command, "preflightd ", "go run ./server/cmd/preflightd ", 1)
		}
	}
	t.Fatalf("doc.go no longer shows %q on a code line of its own; update readme_ops_test.go", command)
	return ""
}

// guideProxyStdio requires the guide's proxy section to show the stdio
// proxy command and returns it with the catalog file shown after it.
func guideProxyStdio(t *testing.T) (command, tools string) {
	t.Helper()
	const section = "MCP guarding proxy"
	blocks := readmeBlocks(readRoot(t, "server/site/index.md"))
	for _, c := range shellCommands(blockAfter(t, blocks, section, "sh", 0)) {
		if c == readmeProxyStdio {
			return c, blockAfter(t, blocks, section, "json", 0)
		}
	}
	t.Fatalf("the guide's %q section no longer shows %q; update readme_ops_test.go", section, readmeProxyStdio)
	return "", ""
}

// readmeGuard is a guard against a hang, not a timing assertion.
const readmeGuard = time.Minute

// connectReadmeMCP connects a go-sdk client to the Streamable HTTP endpoint
// at url.
func connectReadmeMCP(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readmeGuard)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "readme-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// callText calls tool with args and returns the text of its result.
func callText(t *testing.T, s *mcp.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readmeGuard)
	defer cancel()
	r, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), r.IsError
}

// testReadmeProxyHTTP puts the proxy in front of the test tool server and
// requires a repeated read-only call to be answered from the first.
func testReadmeProxyHTTP(t *testing.T, bash, root string) {
	upstream := startReadmeProcess(t, bash, root, "go run ./agent/mcpguard/mcptest/toolserver -http 127.0.0.1:0", nil)["listening"]
	command := strings.ReplaceAll(readmeProxyHTTP, readmeUpstreamAddr, upstream)
	proxy := startReadmeProcess(t, bash, root, strings.Replace(command, readmeProxyListen, "--listen 127.0.0.1:0", 1), nil)["listening"]
	s := connectReadmeMCP(t, "http://"+proxy+"/mcp")
	args := map[string]any{"symbol": "ACME"}
	first, isErr := callText(t, s, readmeQuoteTool, args)
	if isErr || !strings.Contains(first, `"execution":1`) {
		t.Fatalf("the first %s through the proxy answered %q (isError %v)", readmeQuoteTool, first, isErr)
	}
	if again, _ := callText(t, s, readmeQuoteTool, args); !strings.Contains(again, `"execution":1`) {
		t.Errorf("the same read-only call again answered %q, want the first answer reused", again)
	}
}

// testReadmeProxyStdio puts the proxy in front of server-everything over
// stdio with the guide's catalog file, and calls the tool that file prices.
func testReadmeProxyStdio(t *testing.T, bash, root, command, catalog string) {
	modules := filepath.Join(root, "server", "interop", "mcp")
	if _, err := os.Stat(filepath.Join(modules, "node_modules", "@modelcontextprotocol", "server-everything", "package.json")); err != nil {
		testpart.Missing(t, "server/interop/mcp/node_modules has no server-everything; run npm ci in server/interop/mcp")
	}
	if _, err := exec.LookPath("npx"); err != nil {
		testpart.Missing(t, "npx is not installed; install Node.js 20+")
	}
	tools := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(tools, []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	command = strings.Replace(command, readmeProxyListen, "--listen 127.0.0.1:0", 1)
	command = strings.Replace(command, "--operations tools.json", "--operations "+tools, 1)
	// npx finds the pinned package installed under --prefix (and its
	// command on PATH) instead of downloading it.
	command = strings.Replace(command, "npx -y", "npx --prefix "+modules+" -y", 1)
	path := "PATH=" + filepath.Join(modules, "node_modules", ".bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	proxy := startReadmeProcess(t, bash, root, command, []string{path})["listening"]
	s := connectReadmeMCP(t, "http://"+proxy+"/mcp")
	if got, isErr := callText(t, s, "get-sum", map[string]any{"a": 2, "b": 3}); isErr || !strings.Contains(got, "5") {
		t.Errorf("get-sum of 2 and 3 through the proxy answered %q (isError %v)", got, isErr)
	}
}

// testReadmeTraced runs the server with metrics and tracing as doc.go
// shows, an OTLP/HTTP receiver standing in for the collector, and requires
// a request to reach both.
func testReadmeTraced(t *testing.T, bash, root, command string) {
	spans := make(chan string, 16)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case spans <- r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type"):
		default:
		}
	}))
	defer collector.Close()
	command = strings.Replace(command, "http://127.0.0.1:4318", collector.URL, 1)
	// Port 0 would equal the API's own --addr (refused), so a port that was
	// free a moment ago.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metrics := ln.Addr().String()
	ln.Close()
	command = strings.Replace(command, "--metrics-addr 127.0.0.1:9464", "--metrics-addr "+metrics, 1)
	// Spans leave in batches; a short delay sends the first one soon.
	addrs := startReadmeProcess(t, bash, root, command, []string{"PREFLIGHT_ADDR=127.0.0.1:0", "OTEL_BSP_SCHEDULE_DELAY=100"})
	resp, err := http.Get("http://" + addrs["listening"] + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case got := <-spans:
		if want := "POST /v1/traces application/x-protobuf"; got != want {
			t.Errorf("the collector received %q, want %q", got, want)
		}
	case <-time.After(readmeGuard):
		t.Fatal("no spans reached the OTLP receiver")
	}
	resp, err = http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "preflight_http_requests_total{") {
		t.Errorf("/metrics has no preflight_http_requests_total:\n%s", body)
	}
}
