package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/server/internal/testpart"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

// startStoreProxy runs `preflightd proxy` with args until the test ends,
// and returns its /mcp URL and its log.
func startStoreProxy(t *testing.T, args ...string) (string, *syncBuffer) {
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
		return "http://" + a + "/mcp", log
	case <-time.After(30 * time.Second): // a guard against a hang
		t.Fatalf("the proxy logged no address:\n%s", log)
	}
	return "", nil
}

// TestProxyStore runs two `preflightd proxy --store redis://…` in front of
// one upstream: a paid read-only call made through one is reused through
// the other (its result saved in Redis), and the store's password
// appears in no log line.
func TestProxyStore(t *testing.T) {
	const password = "s3cret-pw-7"
	addr := testpart.StartRedis(t, "--requirepass", password, "--appendonly", "yes")
	srv, counts := mcptest.NewServer("")
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()
	store := "redis://:" + password + "@" + addr + "/0"
	a, logA := startStoreProxy(t, "--upstream", up.URL, "--store", store)
	b, logB := startStoreProxy(t, "--upstream", up.URL, "--store", store)

	texts := quoteThrough(t, a, b, a)
	if n := counts.Get(mcptest.Quote); n != 1 || texts[0] != texts[1] || texts[1] != texts[2] {
		t.Fatalf("%d executions, answers %q: want 1 execution and its answer three times", n, texts)
	}
	for _, log := range []*syncBuffer{logA, logB} {
		text := log.String()
		if strings.Contains(text, password) {
			t.Fatalf("the log shows the store's password:\n%s", text)
		}
		if !strings.Contains(text, `"msg":"shared store","store":"redis://:xxxxx@`+addr+`/0"`) {
			t.Fatalf("no shared store line with the URL redacted:\n%s", text)
		}
	}
}

// TestProxyStoreUnsafe: a Redis that keeps no append-only file stops the
// start with an error naming --store, without the password.
func TestProxyStoreUnsafe(t *testing.T) {
	const password = "s3cret-pw-8"
	addr := testpart.StartRedis(t, "--requirepass", password, "--appendonly", "no")
	err := run(context.Background(), []string{"proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/mcp",
		"--store", "redis://:" + password + "@" + addr}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--store redis://:xxxxx@"+addr+": ") || !strings.Contains(err.Error(), "appendonly") ||
		strings.Contains(err.Error(), password) {
		t.Fatalf("error %v: want one naming --store and appendonly, without the password", err)
	}
	t.Log(err)
}

// TestProxyStoreWindowBudget: with --store, a principal's budget over a
// window (the principals file's budgetUsd and window) is spent by its runs
// on every replica together.
func TestProxyStoreWindowBudget(t *testing.T) {
	const password = "s3cret-pw-9"
	addr := testpart.StartRedis(t, "--requirepass", password, "--appendonly", "yes")
	srv, counts := mcptest.NewServer("")
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()
	const key = "pf_alice_window"
	principals := writeFile(t, "principals.json", `{"principals": {"alice": {"keySha256": ["`+sha256Hex(key)+`"],
  "policy": {"budgetUsd": 0.35, "window": "1h", "operations": [{"name": "`+mcptest.Quote+`", "priceUsd": 0.10, "ttlSeconds": 0}]}}}}`)
	store := "redis://:" + password + "@" + addr
	var proxies []string
	for range 2 {
		url, _ := startStoreProxy(t, "--upstream", up.URL, "--store", store, "--principals", principals)
		proxies = append(proxies, strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"))
	}
	ctx := context.Background()
	// Four quotes at 0.10, each in a run of its own, alternating between
	// the replicas: 0.35 lets three run.
	var ran []bool
	for i, sym := range []string{"A", "B", "C", "D"} {
		cs, err := connectAs(t, proxies[i%2], key)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": sym},
			Meta: mcp.Meta{"io.agentpreflight/run": "run-" + sym}})
		cs.Close()
		if err != nil {
			t.Fatal(err)
		}
		_, withheld := res.Meta["io.agentpreflight/decision"]
		ran = append(ran, !withheld)
	}
	if fmt.Sprint(ran) != "[true true true false]" || counts.Get(mcptest.Quote) != 3 {
		t.Fatalf("quotes ran %v, %d executions: want the first three (0.30 of the window's 0.35, across both replicas)", ran, counts.Get(mcptest.Quote))
	}
}

// quoteThrough calls market_quote for ACME in the run "invoices" through
// each proxy of urls in turn, and returns the answers' content.
func quoteThrough(t *testing.T, urls ...string) []string {
	t.Helper()
	ctx := context.Background()
	var texts []string
	for _, url := range urls {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "store", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "ACME"},
			Meta: mcp.Meta{"io.agentpreflight/run": "invoices"}})
		cs.Close()
		if err != nil || res.IsError {
			if err == nil {
				err = fmt.Errorf("%s", res.Content[0].(*mcp.TextContent).Text)
			}
			t.Fatalf("market_quote through %s: %v", url, err)
		}
		b, _ := json.Marshal(res.Content)
		texts = append(texts, string(b))
	}
	return texts
}

// TestProxyStoreCluster: two `preflightd proxy --store redis+cluster://…`
// on a Redis Cluster of three primaries: a paid read-only call made
// through one is reused through the other.
func TestProxyStoreCluster(t *testing.T) {
	addrs := testpart.StartRedisCluster(t, "--appendonly", "yes")
	srv, counts := mcptest.NewServer("")
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()
	store := "redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
	a, logA := startStoreProxy(t, "--upstream", up.URL, "--store", store)
	b, _ := startStoreProxy(t, "--upstream", up.URL, "--store", store)
	texts := quoteThrough(t, a, b, a)
	if n := counts.Get(mcptest.Quote); n != 1 || texts[0] != texts[1] || texts[1] != texts[2] {
		t.Fatalf("%d executions, answers %q: want 1 execution and its answer three times", n, texts)
	}
	if !strings.Contains(logA.String(), `"msg":"shared store","store":"redis+cluster://`+addrs[0]) {
		t.Fatalf("no shared store line naming the cluster:\n%s", logA)
	}
}
