package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyPrincipalPolicy runs the binary with a principals file whose
// policies set a principal's run budget, its budget over a window shared
// by its runs, its prices and TTLs, the tools it sees and may call, and
// another principal's call limit; each is counted against the upstream's
// execution counters.
func TestProxyPrincipalPolicy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	up := newMetaUpstream(t)
	const aliceKey, bobKey = "pf_alice_policy", "pf_bob_policy"
	principals := writeFile(t, "principals.json", `{
  "principals": {
    "alice": {"keySha256": ["`+sha256Hex(aliceKey)+`"],
      "policy": {"budgetUsdPerRun": 0.25, "budgetUsd": 0.35, "window": "1h",
        "tools": ["`+mcptest.Quote+`", "`+mcptest.Flaky+`"],
        "operations": [{"name": "`+mcptest.Quote+`", "priceUsd": 0.10, "ttlSeconds": 0}]}},
    "bob": {"keySha256": ["`+sha256Hex(bobKey)+`"], "policy": {"maxCallsPerRun": 2}}
  }
}`)
	// The catalog's price (1.00) is alice's 0.10 under her policy.
	ops := writeFile(t, "ops.json", `{"builtins":false,"operations":[{"provider":"mcp","name":"`+mcptest.Quote+`","priceUsd":1.00}]}`)
	d := startAuthProxy(t, bin, nil, "--upstream", up.srv.URL, "--principals", principals, "--operations", ops)
	ctx := context.Background()
	alice, err := connectAs(t, d.addr, aliceKey)
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	call := func(cs *mcp.ClientSession, run, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{"io.agentpreflight/run": run}})
	}
	ran := func(res *mcp.CallToolResult, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		_, withheld := res.Meta["io.agentpreflight/decision"]
		return !withheld
	}

	t.Run("run budget, then the principal's window budget", func(t *testing.T) {
		// r1: 0.10 + 0.10 fit the run's 0.25, a third does not.
		for i, sym := range []string{"A", "B", "C"} {
			if got, want := ran(call(alice, "r1", mcptest.Quote, map[string]any{"symbol": sym})), i < 2; got != want {
				t.Errorf("r1 quote %s ran %v, want %v", sym, got, want)
			}
		}
		// r2: its own run budget, but alice has 0.15 of 0.35 left: one more.
		for i, sym := range []string{"D", "E"} {
			if got, want := ran(call(alice, "r2", mcptest.Quote, map[string]any{"symbol": sym})), i < 1; got != want {
				t.Errorf("r2 quote %s ran %v, want %v", sym, got, want)
			}
		}
		if n := up.counts.Get(mcptest.Quote); n != 3 {
			t.Errorf("the upstream ran %d quotes, want 3", n)
		}
	})
	t.Run("tools/list filtered, a hidden tool unknown", func(t *testing.T) {
		res, err := alice.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if strings.Join(names, ",") != mcptest.Flaky+","+mcptest.Quote && strings.Join(names, ",") != mcptest.Quote+","+mcptest.Flaky {
			t.Errorf("alice sees %v, want %s and %s", names, mcptest.Quote, mcptest.Flaky)
		}
		// The initialize generation, whose answers are event streams.
		resp, _ := post(t, d.addr, aliceKey, initializeBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		send := func(body string) string {
			req, _ := http.NewRequest(http.MethodPost, "http://"+d.addr+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Body.Close()
			b, _ := io.ReadAll(r.Body)
			return string(b)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		list := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if !strings.Contains(list, mcptest.Quote) || strings.Contains(list, mcptest.Ticket) || strings.Contains(list, mcptest.Countdown) {
			t.Errorf("alice's session tools/list: %s", list)
		}
		answer := send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + mcptest.Ticket + `","arguments":{"title":"x"}}}`)
		if !strings.Contains(answer, `unknown tool \"`+mcptest.Ticket+`\"`) {
			t.Errorf("a hidden tool's call in a session: %s", answer)
		}
		if _, err := call(alice, "r3", mcptest.Ticket, map[string]any{"title": "x"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("a hidden tool's stateless call: %v", err)
		}
		if n := up.counts.Get(mcptest.Ticket); n != 0 {
			t.Errorf("the upstream ran %d tickets for alice, want 0", n)
		}
	})
	t.Run("another principal's call limit, and every tool", func(t *testing.T) {
		bob, err := connectAs(t, d.addr, bobKey)
		if err != nil {
			t.Fatal(err)
		}
		defer bob.Close()
		for i, title := range []string{"one", "two", "three"} {
			if got, want := ran(call(bob, "b1", mcptest.Ticket, map[string]any{"title": title})), i < 2; got != want {
				t.Errorf("bob's ticket %s ran %v, want %v", title, got, want)
			}
		}
		if n := up.counts.Get(mcptest.Ticket); n != 2 {
			t.Errorf("the upstream ran %d tickets, want 2", n)
		}
	})
}
