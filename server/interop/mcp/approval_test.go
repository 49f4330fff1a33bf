package mcpinterop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	p := newProxyScript(t, `{"builtins":false,"operations":[
	  {"provider":"mcp","name":"market_quote","priceUsd":0.1,"approval":{"aboveUsd":"0.05"}},
	  {"provider":"mcp","name":"create_ticket","approval":"always"}]}`)
	key := filepath.Join(t.TempDir(), "approval.key")
	os.WriteFile(key, []byte(strings.Repeat("k", 32)+"\n"), 0o600)
	got, logs := p.run(t, "approval_client.mjs", "--budget-usd", "1", "--approval-key", key, "--", p.tools)
	want := map[string]int{mcptest.Quote: 1, mcptest.Ticket: 1, mcptest.Countdown: 1}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("executions (-want +got):\n%s", d)
	}
	// The proxy's line for each call says what it held and settled: only
	// the approved quote cost money; the calls not approved held nothing.
	var settled, approvals []string
	for _, line := range strings.Split(logs, "\n") {
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
	p := newProxyScript(t, `{"builtins":false,"operations":[{"provider":"mcp","name":"create_ticket","approval":"always"}]}`)
	got, _ := p.run(t, "approval_mrtr.mjs", "--", p.tools)
	if d := cmp.Diff(map[string]int{mcptest.Ticket: 1}, got); d != "" {
		t.Fatalf("executions (-want +got):\n%s", d)
	}
}
