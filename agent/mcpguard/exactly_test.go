package mcpguard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
)

// exactlyTools are the tools of the exactly-once tests: "ask" asks for
// input before it answers (read-only, paid), "send" has an effect (no
// annotations: destructive by MCP's defaults), "look" is read-only.
const exactlyTools = `{"tools":[
	{"name":"ask","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
	{"name":"send","inputSchema":{"type":"object"}},
	{"name":"look","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`

func exactlySession(t *testing.T, opts *mcpguard.Options) *mcpguard.Session {
	t.Helper()
	g, err := mcpguard.NewSession(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	g.SawToolsList("", json.RawMessage(exactlyTools))
	return g
}

// TestInputRequiredChargedOnce: a multi-round trip (input_required, then
// the client's retry with the requestState, over two rounds) is one call:
// decided once (a call limit of 1 lets it finish), charged once, one
// history entry; the server ran three times, as the rounds need.
func TestInputRequiredChargedOnce(t *testing.T) {
	g := exactlySession(t, &mcpguard.Options{BudgetUSD: "1", MaxCalls: 1,
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "ask"}, PriceUSD: "0.25"}}})
	answers := []string{
		`{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{}}},"requestState":"s1"}`,
		`{"resultType":"input_required","inputRequests":{"r":{"method":"elicitation/create","params":{}}},"requestState":"s2"}`,
		`{"content":[{"type":"text","text":"done"}]}`,
	}
	runs := 0
	call := func(params string) string {
		t.Helper()
		res, err := g.CallTool(context.Background(), json.RawMessage(params), func(context.Context) (json.RawMessage, error) {
			runs++
			return json.RawMessage(answers[runs-1]), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(res)
	}
	for i, params := range []string{
		`{"name":"ask","arguments":{"x":1}}`,
		`{"name":"ask","arguments":{"x":1},"inputResponses":{"q":{"action":"accept"}},"requestState":"s1"}`,
		`{"name":"ask","arguments":{"x":1},"inputResponses":{"r":{"action":"accept"}},"requestState":"s2"}`,
	} {
		if got := call(params); got != answers[i] {
			t.Fatalf("round %d: %s, want %s", i+1, got, answers[i])
		}
	}
	ctx := context.Background()
	spent, err := g.Agent().Guard().SpentUSD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := g.Agent().Guard().Ledger().History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 3 || spent != "0.25" || len(hist) != 1 || hist[0].Outcome != preflight.OutcomeSuccess {
		t.Fatalf("%d runs, spent %s, history %+v; want 3 runs, 0.25 spent and one successful entry", runs, spent, hist)
	}
}

// TestInputRequiredWithoutState: a server may ask for input without a
// requestState; the retry (same tool and arguments, with inputResponses)
// still continues the call: charged once.
func TestInputRequiredWithoutState(t *testing.T) {
	g := exactlySession(t, &mcpguard.Options{BudgetUSD: "1",
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "ask"}, PriceUSD: "0.25"}}})
	answers := []string{`{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{}}}}`,
		`{"content":[{"type":"text","text":"done"}]}`}
	runs := 0
	ctx := context.Background()
	for _, params := range []string{`{"name":"ask","arguments":{"x":1}}`, `{"name":"ask","arguments":{"x":1},"inputResponses":{"q":{"action":"accept"}}}`} {
		if _, err := g.CallTool(ctx, json.RawMessage(params), func(context.Context) (json.RawMessage, error) {
			runs++
			return json.RawMessage(answers[runs-1]), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if spent, _ := g.Agent().Guard().SpentUSD(ctx); runs != 2 || spent != "0.25" {
		t.Fatalf("%d runs, spent %s; want 2 runs and 0.25 spent", runs, spent)
	}
}

// TestInputRequiredForeignStateDecided: a retry with a requestState the
// guard did not hand out, or with other arguments than the call that got
// it, is decided as a new call (here refused by the call limit).
func TestInputRequiredForeignStateDecided(t *testing.T) {
	g := exactlySession(t, &mcpguard.Options{MaxCalls: 1})
	forward := func(context.Context) (json.RawMessage, error) {
		return json.RawMessage(`{"resultType":"input_required","inputRequests":{},"requestState":"s1"}`), nil
	}
	ctx := context.Background()
	if _, err := g.CallTool(ctx, json.RawMessage(`{"name":"ask","arguments":{"x":1}}`), forward); err != nil {
		t.Fatal(err)
	}
	for _, params := range []string{
		`{"name":"ask","arguments":{"x":1},"requestState":"forged"}`,
		`{"name":"ask","arguments":{"x":2},"requestState":"s1"}`,
	} {
		res, err := g.CallTool(ctx, json.RawMessage(params), forward)
		if err != nil || !strings.Contains(string(res), "CALL_LIMIT_REACHED") {
			t.Fatalf("%s: %s %v; want the call limit's refusal", params, res, err)
		}
	}
}

// TestRepeatJoinsCallInFlight: identical calls of a tool with an effect
// sent while the first runs (a client re-issuing after its stream broke)
// wait for it: one execution, every caller gets its result.
func TestRepeatJoinsCallInFlight(t *testing.T) {
	g := exactlySession(t, nil)
	var runs atomic.Int64
	release := make(chan struct{})
	started := make(chan struct{})
	forward := func(context.Context) (json.RawMessage, error) {
		if runs.Add(1) == 1 {
			close(started)
		}
		<-release
		return json.RawMessage(`{"content":[{"type":"text","text":"sent"}]}`), nil
	}
	const n = 4
	results := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i > 0 {
				<-started
			}
			// _meta differs per request (a progress token) and is no part of the call.
			params := fmt.Sprintf(`{"name":"send","arguments":{"to":"a"},"_meta":{"progressToken":%d}}`, i)
			res, err := g.CallTool(context.Background(), json.RawMessage(params), forward)
			if err != nil {
				t.Error(err)
			}
			results[i] = string(res)
		})
		if i == 0 {
			<-started
		}
	}
	close(release)
	wg.Wait()
	for i, r := range results {
		if r != `{"content":[{"type":"text","text":"sent"}]}` {
			t.Errorf("caller %d got %s", i, r)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("%d executions, want 1", runs.Load())
	}
}

// TestRepeatAfterCompletion: within the idempotency window a completed
// call of a tool with an effect answers its repeat (one execution); with
// the window set to 0 for the tool the repeat runs; a failed call is
// repeated for real; a call whose outcome is unknown is not run again for
// a tool with an effect (the repeat is told why) but is for a read-only
// one.
func TestRepeatAfterCompletion(t *testing.T) {
	ctx := context.Background()
	type step struct {
		result string
		err    error
	}
	cases := []struct {
		name     string
		specs    []tools.Spec
		tool     string
		first    step
		wantRuns int
		want     string // a substring of the repeat's answer
	}{
		{"success, tool with an effect", nil, "send", step{result: `{"content":[{"type":"text","text":"ok"}]}`}, 1, `"text":"ok"`},
		{"success, window 0", []tools.Spec{{Operation: preflight.Operation{Name: "send"}, IdempotencySeconds: "0"}}, "send",
			step{result: `{"content":[{"type":"text","text":"ok"}]}`}, 2, `"text":"ok"`},
		{"tool failure", nil, "send", step{result: `{"isError":true,"content":[{"type":"text","text":"503 try again"}]}`}, 2, `"text":"ok"`},
		{"outcome unknown, tool with an effect", nil, "send", step{err: fmt.Errorf("upstream gone: %w", mcpguard.ErrOutcomeUnknown)}, 1,
			"outcome of an identical call of send is unknown"},
		{"outcome unknown, read-only tool", nil, "look", step{err: fmt.Errorf("upstream gone: %w", mcpguard.ErrOutcomeUnknown)}, 2, `"text":"ok"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := exactlySession(t, &mcpguard.Options{Specs: tc.specs})
			runs := 0
			forward := func(context.Context) (json.RawMessage, error) {
				runs++
				if runs == 1 {
					if tc.first.err != nil {
						return nil, tc.first.err
					}
					return json.RawMessage(tc.first.result), nil
				}
				return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
			}
			params := json.RawMessage(`{"name":"` + tc.tool + `","arguments":{"to":"a"}}`)
			g.CallTool(ctx, params, forward)
			res, err := g.CallTool(ctx, params, forward)
			if err != nil || !strings.Contains(string(res), tc.want) || runs != tc.wantRuns {
				t.Fatalf("repeat: %s %v after %d runs; want %q after %d", res, err, runs, tc.want, tc.wantRuns)
			}
		})
	}
}

// TestRepeatNeedsSameExtra: a call with the same params but other extra
// (headers the server checks, say) is another request: it runs.
func TestRepeatNeedsSameExtra(t *testing.T) {
	g := exactlySession(t, nil)
	runs := 0
	forward := func(context.Context) (json.RawMessage, error) {
		runs++
		return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
	}
	params := json.RawMessage(`{"name":"send","arguments":{"to":"a"}}`)
	for _, extra := range []string{"Mcp-Param-To: a\n", "Mcp-Param-To: b\n", "Mcp-Param-To: a\n"} {
		if _, err := g.CallToolExtra(context.Background(), params, []byte(extra), forward); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 2 {
		t.Fatalf("%d runs, want 2 (the third repeats the first)", runs)
	}
}
