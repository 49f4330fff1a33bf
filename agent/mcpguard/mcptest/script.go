package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The money the scripted session runs with: the guard in front of the
// session must be configured with this budget and this price for
// market_quote (other tools free).
const (
	ScriptBudgetUSD = "0.45"
	QuotePriceUSD   = "0.10"
)

// ScriptGuard is the guard configuration RunScript expects: the script's
// budget and market_quote's price.
func ScriptGuard() *mcpguard.Options {
	return &mcpguard.Options{
		BudgetUSD: ScriptBudgetUSD,
		Specs:     []tools.Spec{{Operation: preflight.Operation{Name: Quote}, PriceUSD: QuotePriceUSD}},
	}
}

// Tally is what the scripted session observed.
type Tally struct {
	Calls     int            // tools/call requests sent
	Executed  int            // executions the tools counted
	Reused    int            // answered with a byte-identical earlier result, nothing executed
	Coalesced int            // parallel duplicates answered without their own execution
	Withheld  map[string]int // not run, by first reason code
}

// RunScript drives cs, a client session whose tool calls go through a
// guard, through a session of 28 tool calls with repeats, parallel
// duplicates, failures and the budget, and checks every step against
// counts, the upstream tools' own execution counters. Tools are assumed
// unused before.
func RunScript(t testing.TB, cs *mcp.ClientSession, counts func() map[string]int) Tally {
	t.Helper()
	ctx := context.Background()
	tally := Tally{Withheld: map[string]int{}}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	call := func(tool, args string) *mcp.CallToolResult {
		t.Helper()
		tally.Calls++
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s %s: the guard broke the call with an error: %v", tool, args, err)
		}
		return res
	}
	want := func(step string, w map[string]int) {
		t.Helper()
		got := counts()
		for _, tool := range []string{Quote, Ticket, Flaky} {
			if got[tool] != w[tool] {
				t.Fatalf("after %s: %s executed %d times, want %d (all counts %v)", step, tool, got[tool], w[tool], got)
			}
		}
	}
	exec := map[string]int{}
	ran := func(tool string) { exec[tool]++; tally.Executed++ }
	withheld := func(step string, res *mcp.CallToolResult, code string) {
		t.Helper()
		if !res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: withheld result is not one isError text block: %+v", step, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if len(text) < 9 || text[:9] != "not run: " {
			t.Fatalf("%s: message %q does not start with \"not run: \"", step, text)
		}
		got := reasonCodes(t, res)
		if len(got) == 0 || got[0] != code {
			t.Fatalf("%s: reason codes %v, want %s first (message %q)", step, got, code, text)
		}
		if m, ok := res.Meta["io.agentpreflight/decision"].(map[string]any); !ok || m["message"] != text {
			t.Fatalf("%s: _meta lacks the decision: %v", step, res.Meta)
		}
		// structuredContent repeats the decision, except for a tool with an
		// outputSchema, which clients would check it against.
		if hasSC := res.StructuredContent != nil; hasSC == (tool(res) == Ticket) {
			t.Fatalf("%s: structuredContent %v for %s", step, res.StructuredContent, tool(res))
		}
		tally.Withheld[code]++
	}
	same := func(step string, a, b *mcp.CallToolResult) {
		t.Helper()
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("%s: reused result differs:\n%s\n%s", step, ja, jb)
		}
	}

	// 1–2: a paid read-only call, then the same call: reused.
	first := call(Quote, `{"symbol":"AAA"}`)
	ran(Quote)
	want("first quote", exec)
	if first.IsError {
		t.Fatalf("first quote failed: %+v", first)
	}
	same("repeat quote", first, call(Quote, `{"symbol":"AAA"}`))
	tally.Reused++
	want("repeat quote", exec)

	// 3–6: four parallel repeats of a finished call: all reused.
	for _, r := range parallel(t, cs, &tally, 4, Quote, `{"symbol":"AAA"}`) {
		same("parallel repeat", first, r)
		tally.Reused++
	}
	want("parallel repeats", exec)

	// 7–11: five identical calls in one turn, to a slow tool: one runs,
	// the others wait for it and get its result.
	burst := parallel(t, cs, &tally, 5, Quote, `{"symbol":"`+SlowSymbol+`"}`)
	ran(Quote)
	want("parallel duplicates", exec)
	for _, r := range burst[1:] {
		same("parallel duplicate", burst[0], r)
	}
	tally.Coalesced += 4

	// 12–14: a transient failure does not stop a retry; the success is then reused.
	if r := call(Flaky, `{"q":"x"}`); !r.IsError {
		t.Fatalf("flaky first call did not fail")
	}
	ran(Flaky)
	ok := call(Flaky, `{"q":"x"}`)
	ran(Flaky)
	if ok.IsError {
		t.Fatalf("flaky retry failed: %+v", ok)
	}
	same("flaky reuse", ok, call(Flaky, `{"q":"x"}`))
	tally.Reused++
	want("flaky", exec)

	// 15–18: a terminal failure is not retried; other arguments still run.
	if r := call(Ticket, `{"title":"disk full"}`); !r.IsError || len(reasonCodes(t, r)) != 0 {
		t.Fatalf("ticket: want the tool's own failure, got %+v", r)
	}
	ran(Ticket)
	withheld("ticket retry", call(Ticket, `{"title":"disk full"}`), "RETRY_CAP_REACHED")
	withheld("ticket retry 2", call(Ticket, `{"title":"disk full"}`), "RETRY_CAP_REACHED")
	call(Ticket, `{"title":"cpu hot"}`)
	ran(Ticket)
	want("tickets", exec)

	// 19–20: arguments that break the tool's schema never reach it.
	withheld("bad args", call(Quote, `{"symbol":""}`), "INVALID_PAYLOAD")
	withheld("bad args 2", call(Quote, `{"ticker":"AAA"}`), "INVALID_PAYLOAD")
	want("bad args", exec)

	// 21–24: the budget: 0.45 affords four quotes at 0.10; the fifth waits.
	call(Quote, `{"symbol":"CCC"}`)
	ran(Quote)
	call(Quote, `{"symbol":"DDD"}`)
	ran(Quote)
	want("spending", exec)
	over := call(Quote, `{"symbol":"EEE"}`)
	withheld("over budget", over, "BUDGET_EXCEEDED")
	if text := over.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "($0.1; $0.05 left)") {
		t.Fatalf("over budget: message %q does not give the price and the money left", text)
	}
	withheld("over budget 2", call(Quote, `{"symbol":"FFF"}`), "BUDGET_EXCEEDED")
	want("over budget", exec)

	// 25–27: free work goes on: a saved result is still reused, a free tool
	// still runs.
	same("reuse at budget", first, call(Quote, `{"symbol":"AAA"}`))
	tally.Reused++
	call(Flaky, `{"q":"y"}`)
	ran(Flaky)
	call(Flaky, `{"q":"y"}`)
	ran(Flaky)
	withheld("ticket retry 3", call(Ticket, `{"title":"disk full"}`), "RETRY_CAP_REACHED")
	want("end", exec)

	// The session is not broken: other MCP requests still work (ping
	// only before 2026-07-28, which removed it).
	if cs.InitializeResult().ProtocolVersion < "2026-07-28" {
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatalf("ping after the script: %v", err)
		}
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list after the script: %v", err)
	}
	spent := exec[Quote] * 10 // cents
	if spent > 45 {
		t.Fatalf("spent $0.%02d, over the $0.45 budget", spent)
	}
	if tally.Calls < 20 {
		t.Fatalf("only %d calls", tally.Calls)
	}
	return tally
}

// parallel sends n identical calls at once and returns their results.
func parallel(t testing.TB, cs *mcp.ClientSession, tally *Tally, n int, tool, args string) []*mcp.CallToolResult {
	t.Helper()
	out := make([]*mcp.CallToolResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		}()
	}
	wg.Wait()
	tally.Calls += n
	for i, err := range errs {
		if err != nil {
			t.Fatalf("parallel %s %s #%d: %v", tool, args, i, err)
		}
	}
	return out
}

// reasonCodes reads the reason codes of the decision in _meta (nil when
// absent: a result the guard did not write).
func reasonCodes(t testing.TB, res *mcp.CallToolResult) []string {
	t.Helper()
	b, err := json.Marshal(res.Meta["io.agentpreflight/decision"])
	if err != nil {
		t.Fatalf("_meta: %v", err)
	}
	var d struct {
		ReasonCodes []string `json:"reasonCodes"`
	}
	json.Unmarshal(b, &d)
	return d.ReasonCodes
}

// tool names the tool of a withheld result, from its decision in _meta.
func tool(res *mcp.CallToolResult) string {
	m, _ := res.Meta["io.agentpreflight/decision"].(map[string]any)
	name, _ := m["tool"].(string)
	return name
}

// String summarises the tally for test logs and reports.
func (t Tally) String() string {
	return fmt.Sprintf("%d calls: %d executed, %d reused, %d coalesced, withheld %v", t.Calls, t.Executed, t.Reused, t.Coalesced, t.Withheld)
}
