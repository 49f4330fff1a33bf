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
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildTools builds preflightd and the stdio test tool server.
func buildTools(ctx context.Context, t *testing.T) (preflightd, toolserver string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		requirement(t, "the go command is not on PATH (%v); it is needed to build preflightd", err)
	}
	dir := t.TempDir()
	for _, b := range []struct{ out, pkg string }{
		{"preflightd", "github.com/agentpreflight/preflight/server/cmd/preflightd"},
		{"toolserver", "github.com/agentpreflight/preflight/agent/mcpguard/mcptest/toolserver"},
	} {
		if out, err := exec.CommandContext(ctx, goTool, "build", "-o", filepath.Join(dir, b.out), b.pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return filepath.Join(dir, "preflightd"), filepath.Join(dir, "toolserver")
}

// needNode returns the node binary, after checking that npm ci ran.
func needNode(t *testing.T, pkg string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		requirement(t, "node is not installed (%v); install Node.js 20 or newer, then run npm ci in server/interop/mcp", err)
	}
	if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
		requirement(t, "server/interop/mcp/node_modules/%s is missing (%v); run npm ci in server/interop/mcp", pkg, err)
	}
	return node
}

// proxyScript runs a TypeScript SDK client script against `preflightd
// proxy`, with preflightd and the stdio test tools built and a tool-spec
// file written.
type proxyScript struct {
	ctx    context.Context
	node   string
	bin    string // preflightd
	tools  string // the test tool server (stdio, or -http ADDR)
	ops    string // the tool-spec file
	counts string // where the tools count their executions (MCPTEST_COUNTS)
}

// newProxyScript builds preflightd and the test tools and writes
// operations, a tool-spec file, for a test that ends within three minutes
// (a guard against a hang).
func newProxyScript(t *testing.T, operations string) *proxyScript {
	t.Helper()
	node := needNode(t, "@modelcontextprotocol/sdk")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	bin, tools := buildTools(ctx, t)
	dir := t.TempDir()
	p := &proxyScript{ctx: ctx, node: node, bin: bin, tools: tools,
		ops: filepath.Join(dir, "operations.json"), counts: filepath.Join(dir, "counts.json")}
	t.Setenv("MCPTEST_COUNTS", p.counts)
	if err := os.WriteFile(p.ops, []byte(operations), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run starts `preflightd proxy --listen 127.0.0.1:0 --operations FILE
// args…`, runs `node script` against its /mcp endpoint, fails the test
// unless the script reports PASS, and returns the tools' executions and the
// proxy's log.
func (p *proxyScript) run(t *testing.T, script string, args ...string) (map[string]int, string) {
	t.Helper()
	addr, logs := startServer(p.ctx, t, p.bin, append([]string{"proxy", "--listen", "127.0.0.1:0", "--operations", p.ops}, args...)...)
	out, err := exec.CommandContext(p.ctx, p.node, script, "http://"+addr+"/mcp").CombinedOutput()
	t.Logf("node %s:\n%s", script, out)
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the TypeScript client failed: %v\nproxy log:\n%s", err, logs())
	}
	got, err := mcptest.ReadCounts(p.counts)
	if err != nil {
		t.Fatal(err)
	}
	return got, logs()
}

// TestProxyTypeScriptClient drives `preflightd proxy` (stdio upstream: the
// test tools) with the TypeScript SDK client, then checks the tools' own
// execution counters.
func TestProxyTypeScriptClient(t *testing.T) {
	p := newProxyScript(t, `{"builtins":false,"operations":[{"provider":"mcp","name":"market_quote","priceUsd":0.1,"ttlSeconds":600}]}`)
	got, _ := p.run(t, "proxy_client.mjs", "--budget-usd", "1", "--", p.tools)
	// AAA once, SLOW once (three calls), the ticket once (two calls), the
	// empty symbol never.
	want := map[string]int{mcptest.Quote: 2, mcptest.Ticket: 1}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("executions (-want +got):\n%s", d)
	}
}

// TestProxyEverythingServer puts `preflightd proxy` in front of
// @modelcontextprotocol/server-everything (npm, over stdio) and compares
// what a Go client sees through the proxy with what it sees directly.
// The server's own progress notifications show when a tool really ran.
func TestProxyEverythingServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a guard against a hang
	defer cancel()
	node, server, addr, logs := everythingProxy(ctx, t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s", logs())
		}
	})

	progress := make(chan float64, 100)
	newClient := func() *mcp.Client {
		return mcp.NewClient(&mcp.Implementation{Name: "everything-interop", Version: "1.0.0"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Progress },
		})
	}
	direct, err := newClient().Connect(ctx, &mcp.CommandTransport{Command: exec.Command(node, server, "stdio")}, nil)
	if err != nil {
		t.Fatalf("connect to server-everything directly: %v", err)
	}
	defer direct.Close()
	proxied, err := newClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	defer proxied.Close()

	// Lists and a plain call: the same through the proxy as directly.
	same := func(what string, direct, proxied any) {
		t.Helper()
		d, _ := json.Marshal(direct)
		p, _ := json.Marshal(proxied)
		if diff := cmp.Diff(string(d), string(p)); diff != "" {
			t.Errorf("%s differs through the proxy (-direct +proxied):\n%s", what, diff)
		}
	}
	dt, err1 := direct.ListTools(ctx, nil)
	pt, err2 := proxied.ListTools(ctx, nil)
	if err1 != nil || err2 != nil {
		t.Fatalf("tools/list: %v / %v", err1, err2)
	}
	same("tools/list", dt, pt)
	dp, _ := direct.ListPrompts(ctx, nil)
	pp, _ := proxied.ListPrompts(ctx, nil)
	same("prompts/list", dp, pp)
	dr, _ := direct.ListResources(ctx, nil)
	pr, _ := proxied.ListResources(ctx, nil)
	same("resources/list", dr, pr)
	sum := &mcp.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": 1, "b": 2}}
	ds, _ := direct.CallTool(ctx, sum)
	ps, err := proxied.CallTool(ctx, sum)
	if err != nil {
		t.Fatal(err)
	}
	same("get-sum", ds, ps)

	// A read-only tool that reports progress: the first call runs (three
	// progress notifications), the repeat is the saved result (none).
	for len(progress) > 0 {
		<-progress
	}
	long := func() *mcp.CallToolParams {
		p := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.3, "steps": 3}}
		p.SetProgressToken(time.Now().String())
		return p
	}
	first, err := proxied.CallTool(ctx, long())
	if err != nil || first.IsError {
		t.Fatalf("long-running operation: %v %+v", err, first)
	}
	waitProgress(t, progress, 3)
	again, err := proxied.CallTool(ctx, long())
	if err != nil {
		t.Fatal(err)
	}
	same("repeated long-running operation", first, again)
	expectNoProgress(t, progress)

	// Three identical calls at once: one execution.
	par := make(chan *mcp.CallToolResult, 3)
	for range 3 {
		go func() {
			p := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.6, "steps": 2}}
			p.SetProgressToken(time.Now().String())
			r, err := proxied.CallTool(ctx, p)
			if err != nil {
				t.Error(err)
			}
			par <- r
		}()
	}
	r0, r1, r2 := <-par, <-par, <-par
	same("parallel duplicate", r0, r1)
	same("parallel duplicate", r0, r2)
	waitProgress(t, progress, 2)
	expectNoProgress(t, progress)

	// A misspelled tool name is withheld with a did-you-mean.
	typo, err := proxied.CallTool(ctx, &mcp.CallToolParams{Name: "get-summ", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || !typo.IsError || !strings.Contains(typo.Content[0].(*mcp.TextContent).Text, `did you mean "get-sum"?`) {
		t.Fatalf("typo: %v %+v", err, typo)
	}

	// Arguments that break get-sum's inputSchema (draft-07, as the
	// TypeScript SDK writes it) are withheld by preflight: the tool never
	// sees them.
	bad := &mcp.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": "one", "b": 2}}
	r, err := proxied.CallTool(ctx, bad)
	if err != nil || !r.IsError || reasonCode(r) != "INVALID_PAYLOAD" {
		t.Fatalf("get-sum {a:\"one\",b:2}: %v %+v, want it withheld with INVALID_PAYLOAD", err, r)
	}
	if err := proxied.Ping(ctx, nil); err != nil {
		t.Fatalf("ping after the decisions: %v", err)
	}
}

// everythingProxy starts `preflightd proxy` in front of
// @modelcontextprotocol/server-everything (npm, over stdio) and returns
// node, the server's script, the proxy's address and its log.
func everythingProxy(ctx context.Context, t *testing.T) (node, server, addr string, logs func() string) {
	t.Helper()
	node = needNode(t, "@modelcontextprotocol/server-everything")
	bin, _ := buildTools(ctx, t)
	server, err := filepath.Abs(filepath.Join("node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	addr, logs = startServer(ctx, t, bin, "proxy", "--listen", "127.0.0.1:0", "--", node, server, "stdio")
	return node, server, addr, logs
}

// TestProxyTasks runs proxy_tasks.mjs, the TypeScript SDK client using
// MCP tasks (2025-11-25), against `preflightd proxy` in front of
// @modelcontextprotocol/server-everything (npm, over stdio): a
// task-augmented call, then tasks/get, tasks/result and tasks/list, which
// the proxy passes to the upstream that declared tasks.
func TestProxyTasks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a guard against a hang
	defer cancel()
	node, _, addr, logs := everythingProxy(ctx, t)
	out, err := exec.CommandContext(ctx, node, "proxy_tasks.mjs", "http://"+addr+"/mcp").CombinedOutput()
	t.Logf("node proxy_tasks.mjs:\n%s", out)
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the TypeScript client failed: %v\nproxy log:\n%s", err, logs())
	}
}

func reasonCode(r *mcp.CallToolResult) string {
	b, _ := json.Marshal(r.Meta["io.agentpreflight/decision"])
	var d struct {
		ReasonCodes []string `json:"reasonCodes"`
	}
	json.Unmarshal(b, &d)
	if len(d.ReasonCodes) == 0 {
		return ""
	}
	return d.ReasonCodes[0]
}

func waitProgress(t *testing.T, ch chan float64, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-ch:
		case <-time.After(10 * time.Second): // a guard against a hang
			t.Fatalf("got %d progress notifications, want %d", i, n)
		}
	}
}

// expectNoProgress checks that no progress notification arrives in a
// short while: no execution the proxy did not report.
func expectNoProgress(t *testing.T, ch chan float64) {
	t.Helper()
	select {
	case p := <-ch:
		t.Fatalf("an extra progress notification (%v): the tool ran again", p)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestProxyTypeScriptRuns drives `preflightd proxy` with TypeScript SDK
// clients that name their runs (proxy_runs.mjs): two runs of one
// principal keep separate histories, and a run named in _meta from
// another session is the same run as by header.
func TestProxyTypeScriptRuns(t *testing.T) {
	p := newProxyScript(t, `{"builtins":false,"operations":[{"provider":"mcp","name":"market_quote","priceUsd":0.1,"ttlSeconds":600}]}`)
	// One upstream process over HTTP for every session, so that its
	// counters are all the executions.
	up, _ := startServer(p.ctx, t, p.tools, "-http", "127.0.0.1:0")
	got, _ := p.run(t, "proxy_runs.mjs", "--budget-usd", "1", "--upstream", "http://"+up+"/mcp")
	// One execution per run: run A's (its repeat and client C's call by
	// _meta reuse it) and run B's.
	if d := cmp.Diff(map[string]int{mcptest.Quote: 2}, got); d != "" {
		t.Fatalf("executions (-want +got):\n%s", d)
	}
}
