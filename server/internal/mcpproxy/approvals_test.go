package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/server/internal/identity"
	"github.com/agentpreflight/preflight/server/internal/sharedstate"
	"github.com/agentpreflight/preflight/server/internal/testpart"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approvalGuard prices the scope upstream's "send" (destructive by MCP's
// defaults: it has no annotations) at $0.25 and asks approval of it; the
// read-only "lookup" has the same policy and never asks. Each run may
// spend $1.
// The ledger store is given so that the tests can read what it holds.
func approvalGuard() mcpguard.Options {
	dest := tools.Approval{When: tools.ApprovalDestructive}
	return mcpguard.Options{BudgetUSD: "1", LedgerStore: agent.NewMemoryLedgerStore(nil), Specs: []tools.Spec{
		{Operation: preflight.Operation{Name: "send"}, PriceUSD: "0.25", Approval: dest},
		{Operation: preflight.Operation{Name: "lookup"}, PriceUSD: "0.25", Approval: dest},
	}}
}

// balanceOf is the balance of the ledger store (money spent and held,
// reservations made) and the history length of the scope key.
func balanceOf(t *testing.T, p *Proxy, key scopeKey) (agent.Balance, int) {
	t.Helper()
	ctx := context.Background()
	st, err := p.opts.Guard.LedgerStore.StateOf(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	sc := p.existingScope(key)
	if sc == nil {
		return st.Balance, 0
	}
	hist, err := sc.guard.Agent().Guard().Ledger().History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Balance, len(hist)
}

// TestProxyApprovalGoSDK: the go-sdk client (2026-07-28) through the
// proxy: a call of the destructive tool asks (the client's elicitation
// handler sees the tool, the arguments, the cost and why); an accept runs
// it once upstream and charges it once; a decline runs nothing and
// spends nothing; a read-only call never asks.
func TestProxyApprovalGoSDK(t *testing.T) {
	up := newScopeUpstream(t)
	p, url := scopeProxy(t, up, approvalGuard())
	var asked []string
	answer := "accept"
	c := mcp.NewClient(&mcp.Implementation{Name: "approver", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: answer, Content: map[string]any{"approve": answer == "accept"}}, nil
		},
	})
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	key := scopeKey{identity.Anonymous, ""} // 2026-07-28 has no sessions: the principal's default run
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"to": "bob"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "sent to bob (execution 1)" {
		t.Fatalf("approved send: %v %+v", err, res)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "Tool: send") || !strings.Contains(asked[0], `Arguments: {"to":"bob"}`) ||
		!strings.Contains(asked[0], "Estimated cost: $0.25") || !strings.Contains(asked[0], "destructive") {
		t.Fatalf("the elicitations: %q; want one showing the call", asked)
	}
	if b, n := balanceOf(t, p, key); up.send.Load() != 1 || b.SpentUSD != "0.25" || b.ReservedUSD != "0" || n != 1 {
		t.Fatalf("after the accepted call: %d executions, %+v, %d history entries; want 1, 0.25 spent, 1", up.send.Load(), b, n)
	}
	answer = "decline"
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"to": "carol"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not approved") {
		t.Fatalf("declined send: %v %+v", err, res)
	}
	if b, n := balanceOf(t, p, key); up.send.Load() != 1 || b.SpentUSD != "0.25" || n != 1 || len(asked) != 2 {
		t.Fatalf("after the declined call: %d executions, %+v, %d history entries, %d asked; want 1, 0.25 spent, 1, 2", up.send.Load(), b, n, len(asked))
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"q": "x"}}); err != nil || res.IsError || len(asked) != 2 {
		t.Fatalf("read-only lookup: %v %+v, %d asked", err, res, len(asked))
	}
}

// rawCall posts one 2026-07-28 tools/call with params and returns the
// JSON-RPC response's result.
func rawCall(t *testing.T, url, principal string, id int, params string) map[string]json.RawMessage {
	t.Helper()
	var head struct {
		Name string `json:"name"`
	}
	json.Unmarshal([]byte(params), &head)
	var p map[string]json.RawMessage
	json.Unmarshal([]byte(params), &p)
	p["_meta"] = json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`)
	pb, _ := json.Marshal(p)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, pb)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": head.Name, "X-Test-Principal": principal, RunHeader: "r1"} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if i := bytes.LastIndex(b, []byte("data: ")); i >= 0 {
		b = b[i+len("data: "):]
	}
	var m struct {
		Result map[string]json.RawMessage `json:"result"`
		Error  json.RawMessage            `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Result == nil {
		t.Fatalf("answer %q (%v): want a result", b, err)
	}
	return m.Result
}

// TestProxyApprovalStateless: stateless 2026-07-28 requests through the
// proxy: the first answer is input_required and holds no budget; a
// tampered requestState, one of another principal, and a replay of a used
// one run nothing and spend nothing; the accept runs the call once.
func TestProxyApprovalStateless(t *testing.T) {
	up := newScopeUpstream(t)
	g := approvalGuard()
	g.Defaults.IdempotencySeconds = "0" // so that the exact replay reaches the approval check
	p, url := scopeProxy(t, up, g)
	key := scopeKey{"alice", "run:r1"}
	first := rawCall(t, url, "alice", 1, `{"name":"send","arguments":{"to":"bob"}}`)
	var state string
	json.Unmarshal(first["requestState"], &state)
	if string(first["resultType"]) != `"input_required"` || state == "" {
		t.Fatalf("first answer %v, want input_required with a requestState", first)
	}
	if b, n := balanceOf(t, p, key); up.send.Load() != 0 || b.ReservedUSD != "0" || b.SpentUSD != "0" || n != 0 {
		t.Fatalf("while waiting: %d executions, %+v, %d history entries; want nothing run, held or spent", up.send.Load(), b, n)
	}
	retry := func(principal, state, args string) map[string]json.RawMessage {
		return rawCall(t, url, principal, 2, `{"name":"send","arguments":`+args+`,"requestState":"`+state+
			`","inputResponses":{"`+mcpguard.ApprovalInputKey+`":{"action":"accept","content":{"approve":true}}}}`)
	}
	refused := func(what string, res map[string]json.RawMessage, want string) {
		t.Helper()
		var meta map[string]mcpguard.Withheld
		json.Unmarshal(res["_meta"], &meta)
		if string(res["isError"]) != "true" || meta[mcpguard.MetaKey].Approval != want {
			t.Fatalf("%s: %v, want a result not run (approval %q)", what, res, want)
		}
		if b, n := balanceOf(t, p, key); up.send.Load() > 1 || b.ReservedUSD != "0" || n > 1 {
			t.Fatalf("%s: %d executions, %+v, %d history entries", what, up.send.Load(), b, n)
		}
	}
	tampered := state[:len(state)-3] + "xyz"
	refused("tampered", retry("alice", tampered, `{"to":"bob"}`), "invalid")
	refused("other arguments", retry("alice", state, `{"to":"eve"}`), "invalid")
	refused("other principal", retry("mallory", state, `{"to":"bob"}`), "invalid")
	if up.send.Load() != 0 {
		t.Fatalf("%d executions before the accept", up.send.Load())
	}
	res := retry("alice", state, `{"to":"bob"}`)
	var content []mcp.TextContent
	json.Unmarshal(res["content"], &content)
	if len(content) != 1 || content[0].Text != "sent to bob (execution 1)" {
		t.Fatalf("accepted retry: %v", res)
	}
	refused("replayed", retry("alice", state, `{"to":"bob"}`), "used")
	if b, n := balanceOf(t, p, key); up.send.Load() != 1 || b.SpentUSD != "0.25" || n != 1 {
		t.Fatalf("in all: %d executions, %+v, %d history entries; want 1, 0.25 spent, 1", up.send.Load(), b, n)
	}
}

// TestProxyApprovalLegacy: a client of the 2025-11-25 generation (the
// initialize handshake) cannot retry an input_required result: the proxy
// sends it an elicitation/create request of its own, and the call waits
// for the answer, holding no budget meanwhile. A client without the
// elicitation capability is not asked, and its call is not run.
func TestProxyApprovalLegacy(t *testing.T) {
	up := newScopeUpstream(t)
	p, url := scopeProxy(t, up, approvalGuard())
	ctx := context.Background()
	var asked atomic.Int64
	var heldWhileAsked agent.Balance
	var key scopeKey
	answer := "accept"
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			heldWhileAsked, _ = balanceOf(t, p, key)
			if !strings.Contains(req.Params.Message, "Tool: send") {
				return nil, fmt.Errorf("the elicitation does not show the call: %q", req.Params.Message)
			}
			return &mcp.ElicitResult{Action: answer, Content: map[string]any{"approve": answer == "accept"}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %s, want 2025-11-25", v)
	}
	key = scopeKey{identity.Anonymous, "session:" + cs.ID()}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"to": "bob"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "sent to bob (execution 1)" {
		t.Fatalf("approved send: %v %+v", err, res)
	}
	if b, n := balanceOf(t, p, key); asked.Load() != 1 || up.send.Load() != 1 || b.SpentUSD != "0.25" || n != 1 || heldWhileAsked.ReservedUSD != "0" {
		t.Fatalf("%d asked, %d executions, %+v, %d history entries, %+v held while asked; want 1, 1, 0.25 spent, 1, nothing held",
			asked.Load(), up.send.Load(), b, n, heldWhileAsked)
	}
	answer = "decline"
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"to": "carol"}})
	if err != nil || !res.IsError || asked.Load() != 2 || up.send.Load() != 1 {
		t.Fatalf("declined send: %v %+v, %d asked, %d executions", err, res, asked.Load(), up.send.Load())
	}
	if b, n := balanceOf(t, p, key); b.SpentUSD != "0.25" || n != 1 {
		t.Fatalf("the decline cost: %+v, %d history entries", b, n)
	}

	// No elicitation capability: not asked, not run.
	plain := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
	cs2, err := plain.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	res, err = cs2.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"to": "dave"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "elicitation capability") || up.send.Load() != 1 {
		t.Fatalf("a client that cannot be asked: %v %+v, %d executions", err, res, up.send.Load())
	}
}

// TestReplicasApprovalRedis: two replicas on one Redis with one approval
// key: a call asked on replica a and accepted on b runs once and is
// charged once in the shared ledger; the same approval replayed on a is
// refused there (its nonce was taken on b). Replicas with keys of their
// own refuse each other's approvals.
func TestReplicasApprovalRedis(t *testing.T) {
	url := "redis://" + testpart.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	store, err := sharedstate.Open(ctx, url, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	up := newScopeUpstream(t)
	g := approvalGuard()
	g.LedgerStore = nil // the shared store's
	g.Defaults.IdempotencySeconds = "0"
	g.Approvals.Key = []byte(strings.Repeat("s", 32))
	a, _ := replica(t, up, store, g, 0)
	b, _ := replica(t, up, store, g, 0)
	accept := func(url, state string) map[string]json.RawMessage {
		return rawCall(t, url, "alice", 2, `{"name":"send","arguments":{"to":"bob"},"requestState":"`+state+
			`","inputResponses":{"`+mcpguard.ApprovalInputKey+`":{"action":"accept","content":{"approve":true}}}}`)
	}
	approval := func(res map[string]json.RawMessage) string {
		var meta map[string]mcpguard.Withheld
		json.Unmarshal(res["_meta"], &meta)
		return meta[mcpguard.MetaKey].Approval
	}
	first := rawCall(t, a, "alice", 1, `{"name":"send","arguments":{"to":"bob"}}`)
	var state string
	json.Unmarshal(first["requestState"], &state)
	if spent, calls := redisSpent(t, url, "alice", "r1"); state == "" || spent != "0" || calls != 0 || up.send.Load() != 0 {
		t.Fatalf("asked on a: state %q, %s spent, %d calls, %d executions", state, spent, calls, up.send.Load())
	}
	if res := accept(b, state); string(res["isError"]) == "true" || up.send.Load() != 1 {
		t.Fatalf("accepted on b: %v, %d executions", res, up.send.Load())
	}
	if res := accept(a, state); approval(res) != "used" || up.send.Load() != 1 {
		t.Fatalf("replayed on a: %v, %d executions; want refused as used", res, up.send.Load())
	}
	if spent, calls := redisSpent(t, url, "alice", "r1"); spent != "0.25" || calls != 1 {
		t.Fatalf("shared ledger: %s spent, %d calls; want 0.25 and 1", spent, calls)
	}

	// A replica with a key of its own (as without --approval-key).
	g.Approvals.Key = nil
	c, _ := replica(t, up, store, g, 0)
	first = rawCall(t, a, "alice", 3, `{"name":"send","arguments":{"to":"bob"}}`)
	json.Unmarshal(first["requestState"], &state)
	if res := accept(c, state); approval(res) != "invalid" || up.send.Load() != 1 {
		t.Fatalf("a's approval on a replica with another key: %v, %d executions; want refused as invalid", res, up.send.Load())
	}
}

// TestProxyApprovalBridge: a 2026-07-28 go-sdk client through the proxy
// in front of upstreams without a URL, where the approved call goes
// through the stateless bridge: a stdio process of the test tools, and an
// upstream of the initialize handshake only (which fails the test if it
// gets a request carrying the stateless revision's members). The
// approved create_ticket runs once, the declined one never.
func TestProxyApprovalBridge(t *testing.T) {
	bin := toolServer(t)
	for _, up := range []struct {
		name string
		make func(t *testing.T) (Dialer, func() map[string]int)
	}{
		{"stdio process", func(t *testing.T) (Dialer, func() map[string]int) {
			countsFile := filepath.Join(t.TempDir(), "counts.json")
			t.Setenv("MCPTEST_COUNTS", countsFile)
			return CommandDialer(bin), func() map[string]int {
				c, _ := mcptest.ReadCounts(countsFile)
				return c
			}
		}},
		{"initialize-only upstream", func(t *testing.T) (Dialer, func() map[string]int) {
			srv, counts := mcptest.NewServer("")
			return legacyOnly(t, srv, true), counts.Snapshot
		}},
	} {
		t.Run(up.name, func(t *testing.T) {
			inner, counts := up.make(t)
			dial, sent := recordCalls(inner) // the tools/call params the upstream got
			g := mcpguard.Options{Specs: []tools.Spec{{Operation: preflight.Operation{Name: mcptest.Ticket},
				Approval: tools.Approval{When: tools.ApprovalAlways}}}}
			p := New(Options{Dial: dial, Guard: g})
			px := httptest.NewServer(p)
			defer func() { p.Close(); px.Close() }()
			answer := "accept"
			asked := 0
			c := mcp.NewClient(&mcp.Implementation{Name: "bridge-approver", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: answer, Content: map[string]any{"approve": answer == "accept"}}, nil
				},
			})
			ctx := context.Background()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: px.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Ticket, Arguments: map[string]any{"title": "disk full"}})
			if err != nil || strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "not run") {
				t.Fatalf("approved ticket: %v %+v", err, res)
			}
			answer = "decline"
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Ticket, Arguments: map[string]any{"title": "cpu hot"}})
			if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not approved") {
				t.Fatalf("declined ticket: %v %+v", err, res)
			}
			if n := counts()[mcptest.Ticket]; n != 1 || asked != 2 {
				t.Fatalf("%d ticket executions, %d asked; want 1 and 2", n, asked)
			}
			if sent := sent(); len(sent) != 1 || strings.Contains(sent[0], "requestState") || strings.Contains(sent[0], "inputResponses") {
				t.Fatalf("tools/call sent upstream: %q; want one, without the proxy's requestState and inputResponses", sent)
			}
		})
	}
}

// recordCalls wraps inner so that its connections record the params of
// each tools/call they write to the upstream; sent returns those recorded
// so far.
func recordCalls(inner Dialer) (dial Dialer, sent func() []string) {
	var mu sync.Mutex
	var params []string
	dial = func(ctx context.Context) (mcp.Connection, error) {
		c, err := inner(ctx)
		if err != nil {
			return nil, err
		}
		return &recordingConn{Connection: c, record: func(p string) {
			mu.Lock()
			params = append(params, p)
			mu.Unlock()
		}}, nil
	}
	return dial, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(params)
	}
}

// recordingConn hands the params of each tools/call written to the
// upstream to record.
type recordingConn struct {
	mcp.Connection
	record func(params string)
}

func (r *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		r.record(string(req.Params))
	}
	return r.Connection.Write(ctx, msg)
}
