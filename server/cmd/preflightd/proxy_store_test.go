package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/server/internal/testpart"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyStore runs two `preflightd proxy --store redis://…` in front of
// one upstream: a paid read-only call made through one is reused through
// the other (its result saved in Redis), and the store's password
// appears in no log line.
func TestProxyStore(t *testing.T) {
	const password = "s3cret-pw-7"
	addr := testpart.StartRedis(t, "--requirepass", password, "--appendonly", "yes")
	up, counts := countingUpstream(t)
	store := "redis://:" + password + "@" + addr + "/0"
	a, logA := startProxyCommand(t, "--upstream", up, "--store", store)
	b, logB := startProxyCommand(t, "--upstream", up, "--store", store)

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
	up, counts := countingUpstream(t)
	const key = "pf_alice_window"
	principals := writeFile(t, "principals.json", `{"principals": {"alice": {"keySha256": ["`+sha256Hex(key)+`"],
  "policy": {"budgetUsd": 0.35, "window": "1h", "operations": [{"name": "`+mcptest.Quote+`", "priceUsd": 0.10, "ttlSeconds": 0}]}}}}`)
	store := "redis://:" + password + "@" + addr
	var proxies []string
	for range 2 {
		base, _ := startProxyCommand(t, "--upstream", up, "--store", store, "--principals", principals)
		proxies = append(proxies, strings.TrimPrefix(base, "http://"))
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
// each proxy of bases (base URLs) in turn, and returns the answers' content.
func quoteThrough(t *testing.T, bases ...string) []string {
	t.Helper()
	ctx := context.Background()
	var texts []string
	for _, base := range bases {
		url := base + "/mcp"
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
	up, counts := countingUpstream(t)
	store := "redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
	a, logA := startProxyCommand(t, "--upstream", up, "--store", store)
	b, _ := startProxyCommand(t, "--upstream", up, "--store", store)
	texts := quoteThrough(t, a, b, a)
	if n := counts.Get(mcptest.Quote); n != 1 || texts[0] != texts[1] || texts[1] != texts[2] {
		t.Fatalf("%d executions, answers %q: want 1 execution and its answer three times", n, texts)
	}
	if !strings.Contains(logA.String(), `"msg":"shared store","store":"redis+cluster://`+addrs[0]) {
		t.Fatalf("no shared store line naming the cluster:\n%s", logA)
	}
}
