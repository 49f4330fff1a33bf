package mcpinterop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/google/go-cmp/cmp"
)

// TestProxyApprovalTypeScriptClient drives `preflightd proxy` (stdio
// upstream: the test tools) with the TypeScript SDK client answering the
// proxy's elicitation/create approvals (approval_client.mjs), then checks
// the tools' own execution counters and what each call held and settled
// (the proxy's log line per call): the approved
// quote and the approved ticket ran once each, the declined and cancelled
// calls never, and only the quote was charged.
func TestProxyApprovalTypeScriptClient(t *testing.T) {
	node := needNode(t, "@modelcontextprotocol/sdk")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a guard against a hang
	defer cancel()
	bin, tools := buildTools(ctx, t)
	dir := t.TempDir()
	counts := filepath.Join(dir, "counts.json")
	t.Setenv("MCPTEST_COUNTS", counts)
	ops := filepath.Join(dir, "operations.json")
	os.WriteFile(ops, []byte(`{"builtins":false,"operations":[
	  {"provider":"mcp","name":"market_quote","priceUsd":0.1,"approval":{"aboveUsd":"0.05"}},
	  {"provider":"mcp","name":"create_ticket","approval":"always"}]}`), 0o644)
	key := filepath.Join(dir, "approval.key")
	os.WriteFile(key, []byte(strings.Repeat("k", 32)+"\n"), 0o600)
	addr, logs := startServer(ctx, t, bin, "proxy", "--listen", "127.0.0.1:0", "--operations", ops, "--budget-usd", "1",
		"--approval-key", key, "--", tools)
	out, err := exec.CommandContext(ctx, node, "approval_client.mjs", "http://"+addr+"/mcp").CombinedOutput()
	t.Logf("node approval_client.mjs:\n%s", out)
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the TypeScript client failed: %v\nproxy log:\n%s", err, logs())
	}
	got, err := mcptest.ReadCounts(counts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{mcptest.Quote: 1, mcptest.Ticket: 1, mcptest.Countdown: 1}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("executions (-want +got):\n%s", d)
	}
	// The proxy's line for each call says what it held and settled: only
	// the approved quote cost money; the calls not approved held nothing.
	var settled, approvals []string
	for _, line := range strings.Split(logs(), "\n") {
		var l struct {
			Msg         string `json:"msg"`
			Tool        string `json:"tool"`
			Approval    string `json:"approval"`
			ReservedUSD string `json:"reservedUsd"`
			SettledUSD  string `json:"settledUsd"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Msg != "mcp proxy: tools/call" {
			continue
		}
		settled = append(settled, l.Tool+" "+l.ReservedUSD+"/"+l.SettledUSD)
		approvals = append(approvals, l.Approval)
	}
	wantSettled := []string{"market_quote 0.1/0.1", "market_quote /", "create_ticket /", "create_ticket 0/0", "countdown 0/0"}
	if d := cmp.Diff(wantSettled, settled); d != "" {
		t.Errorf("reserved/settled per call (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"approved", "declined", "declined", "approved", ""}, approvals); d != "" {
		t.Errorf("approvals per call (-want +got):\n%s", d)
	}
}

// TestProxyApprovalTypeScriptMRTR drives `preflightd proxy` with the
// 2026-07-28 multi-round trip over the TypeScript SDK's transport
// (approval_mrtr.mjs): asked, tampered, declined, accepted, replayed. The
// ticket tool ran once: for the accept.
func TestProxyApprovalTypeScriptMRTR(t *testing.T) {
	node := needNode(t, "@modelcontextprotocol/sdk")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a guard against a hang
	defer cancel()
	bin, tools := buildTools(ctx, t)
	dir := t.TempDir()
	counts := filepath.Join(dir, "counts.json")
	t.Setenv("MCPTEST_COUNTS", counts)
	ops := filepath.Join(dir, "operations.json")
	os.WriteFile(ops, []byte(`{"builtins":false,"operations":[{"provider":"mcp","name":"create_ticket","approval":"always"}]}`), 0o644)
	addr, logs := startServer(ctx, t, bin, "proxy", "--listen", "127.0.0.1:0", "--operations", ops, "--", tools)
	out, err := exec.CommandContext(ctx, node, "approval_mrtr.mjs", "http://"+addr+"/mcp").CombinedOutput()
	t.Logf("node approval_mrtr.mjs:\n%s", out)
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the TypeScript client failed: %v\nproxy log:\n%s", err, logs())
	}
	got, err := mcptest.ReadCounts(counts)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int{mcptest.Ticket: 1}, got); d != "" {
		t.Fatalf("executions (-want +got):\n%s", d)
	}
}
