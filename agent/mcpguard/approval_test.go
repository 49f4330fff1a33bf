package mcpguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approvalSession is a Session with one destructive tool "rm" ($0.25,
// approval "destructive") and a read-only "ls" (same policy), a $1
// budget, and a forward that counts executions and records the params it
// would send upstream.
type approvalSession struct {
	*Session
	store agent.LedgerStore
	runs  int
	sent  []string
}

func newApprovalSession(t testing.TB, window string, a Approvals) *approvalSession {
	t.Helper()
	yes := true
	store := agent.NewMemoryLedgerStore(nil)
	s, err := NewSession(&Options{BudgetUSD: "1", LedgerStore: store, Approvals: a,
		Defaults: tools.Spec{IdempotencySeconds: json.Number(window)},
		Specs: []tools.Spec{
			{Operation: preflight.Operation{Name: "rm", Annotations: &preflight.ToolAnnotations{DestructiveHint: &yes}},
				PriceUSD: "0.25", Approval: tools.Approval{When: tools.ApprovalDestructive}},
			{Operation: preflight.Operation{Name: "ls", Annotations: &preflight.ToolAnnotations{ReadOnlyHint: &yes}},
				PriceUSD: "0.25", Approval: tools.Approval{When: tools.ApprovalDestructive}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.SawToolsList("", json.RawMessage(`{"tools":[{"name":"rm","inputSchema":{"type":"object"}},{"name":"ls","inputSchema":{"type":"object"}}]}`))
	return &approvalSession{Session: s, store: store}
}

// call sends params and returns the result as a map, and the report.
func (as *approvalSession) call(t testing.TB, ctx context.Context, params string) (map[string]json.RawMessage, CallReport) {
	t.Helper()
	var rep CallReport
	res, err := as.CallTool(WithCallReport(ctx, &rep), json.RawMessage(params), func(ctx context.Context) (json.RawMessage, error) {
		as.runs++
		as.sent = append(as.sent, string(UpstreamParams(ctx, json.RawMessage(params))))
		return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res, &m); err != nil {
		t.Fatal(err)
	}
	return m, rep
}

// balance is the ledger's money and call count, and history length.
func (as *approvalSession) balance(t *testing.T) (agent.Balance, int) {
	t.Helper()
	st, err := as.store.StateOf(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	hist, err := as.Agent().Guard().Ledger().History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Balance, len(hist)
}

// ask calls rm with args and returns the requestState of the
// input_required answer, checking that nothing ran or was held.
func (as *approvalSession) ask(t *testing.T, args string) string {
	t.Helper()
	runs := as.runs
	m, rep := as.call(t, context.Background(), `{"name":"rm","arguments":`+args+`}`)
	if string(m["resultType"]) != `"input_required"` || rep.Approval != "asked" || as.runs != runs {
		t.Fatalf("first call: %v (report %q, %d runs), want input_required, nothing run", m, rep.Approval, as.runs-runs)
	}
	var ir map[string]struct {
		Method string           `json:"method"`
		Params mcp.ElicitParams `json:"params"`
	}
	if err := json.Unmarshal(m["inputRequests"], &ir); err != nil {
		t.Fatal(err)
	}
	e := ir[ApprovalInputKey]
	if e.Method != "elicitation/create" || !strings.Contains(e.Params.Message, "Tool: rm") ||
		!strings.Contains(e.Params.Message, "Arguments: "+canonical(json.RawMessage(args))) || !strings.Contains(e.Params.Message, "Estimated cost: $0.25") ||
		!strings.Contains(e.Params.Message, "destructive") {
		t.Fatalf("the elicitation does not show the call: %+v", e)
	}
	if _, ok := m["content"]; ok {
		t.Errorf("an input_required result with content: %v", m)
	}
	b, n := as.balance(t)
	if d := cmp.Diff(agent.Balance{SpentUSD: b.SpentUSD, ReservedUSD: "0", Calls: as.runs}, b); d != "" || n != as.runs {
		t.Errorf("while waiting for approval the ledger holds money (-want +got):\n%s", d)
	}
	var state string
	json.Unmarshal(m["requestState"], &state)
	return state
}

func retry(args, state, answer string) string {
	return `{"name":"rm","arguments":` + args + `,"requestState":"` + state + `","inputResponses":{"` + ApprovalInputKey + `":` + answer + `}}`
}

const accept = `{"action":"accept","content":{"approve":true}}`

func TestApprovalAcceptRunsOnce(t *testing.T) {
	as := newApprovalSession(t, "300", Approvals{Principal: "alice", Run: "r1"})
	ctx := context.Background()
	state := as.ask(t, `{"path":"/tmp/x"}`)
	if b, n := as.balance(t); b.SpentUSD != "0" || b.Calls != 0 || n != 0 {
		t.Fatalf("asking charged or counted: %+v, %d history entries", b, n)
	}
	m, rep := as.call(t, ctx, retry(`{"path":"/tmp/x"}`, state, accept))
	if string(m["content"]) != `[{"type":"text","text":"done"}]` || as.runs != 1 || rep.Approval != "approved" {
		t.Fatalf("accepted retry: %v after %d runs (report %q), want the result of one run", m, as.runs, rep.Approval)
	}
	// The server got the call as first sent, without the guard's members.
	if d := cmp.Diff([]string{`{"arguments":{"path":"/tmp/x"},"name":"rm"}`}, as.sent); d != "" {
		t.Errorf("params sent upstream (-want +got):\n%s", d)
	}
	if b, n := as.balance(t); b.SpentUSD != "0.25" || b.ReservedUSD != "0" || b.Calls != 1 || n != 1 {
		t.Errorf("after the run: %+v, %d history entries; want 0.25 spent, one call", b, n)
	}
	// The same retry again (a client that lost the answer) gets the answer,
	// not a second run; the state with another answer is refused as used.
	if m, _ := as.call(t, ctx, retry(`{"path":"/tmp/x"}`, state, accept)); string(m["content"]) != `[{"type":"text","text":"done"}]` || as.runs != 1 {
		t.Fatalf("repeated retry: %v after %d runs", m, as.runs)
	}
	m, rep = as.call(t, ctx, retry(`{"path":"/tmp/x"}`, state, `{"action":"accept","content":{"approve":true,"again":1}}`))
	if string(m["isError"]) != "true" || rep.Approval != "used" || as.runs != 1 {
		t.Fatalf("replayed state: %v (report %q) after %d runs, want refused", m, rep.Approval, as.runs)
	}
	if b, _ := as.balance(t); b.SpentUSD != "0.25" || b.Calls != 1 {
		t.Errorf("the replay was charged: %+v", b)
	}
}

// An approved call the server refused before running it (ErrNotRun)
// leaves its approval unspent: the client's next retry runs the call
// without asking the person again, once.
func TestApprovalKeptWhenNotRun(t *testing.T) {
	as := newApprovalSession(t, "300", Approvals{Principal: "alice", Run: "r1"})
	ctx := context.Background()
	state := as.ask(t, `{"path":"/tmp/x"}`)
	refused := 0
	_, err := as.CallTool(ctx, json.RawMessage(retry(`{"path":"/tmp/x"}`, state, accept)), func(context.Context) (json.RawMessage, error) {
		refused++
		return nil, fmt.Errorf("HTTP 401: %w", ErrNotRun)
	})
	if !errors.Is(err, ErrNotRun) || refused != 1 {
		t.Fatalf("refused call: %v after %d forwards, want ErrNotRun after one", err, refused)
	}
	if b, _ := as.balance(t); b.SpentUSD != "0" || b.ReservedUSD != "0" {
		t.Fatalf("the refused call was charged: %+v", b)
	}
	m, rep := as.call(t, ctx, retry(`{"path":"/tmp/x"}`, state, accept))
	if string(m["content"]) != `[{"type":"text","text":"done"}]` || as.runs != 1 || rep.Approval != "approved" {
		t.Fatalf("retry after the refusal: %v after %d runs (report %q), want the result of one run", m, as.runs, rep.Approval)
	}
	m, rep = as.call(t, ctx, retry(`{"path":"/tmp/x"}`, state, `{"action":"accept","content":{"approve":true,"again":1}}`))
	if string(m["isError"]) != "true" || rep.Approval != "used" || as.runs != 1 {
		t.Fatalf("a third use: %v (report %q) after %d runs, want refused as used", m, rep.Approval, as.runs)
	}
	if b, _ := as.balance(t); b.SpentUSD != "0.25" || b.Calls != 2 {
		t.Errorf("after one run and one refusal: %+v, want 0.25 spent and two calls counted", b)
	}
}

func TestApprovalRefusals(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		params func(t *testing.T, as *approvalSession) string
		want   string
	}{
		{"declined", func(t *testing.T, as *approvalSession) string {
			return retry(`{"p":1}`, as.ask(t, `{"p":1}`), `{"action":"decline"}`)
		}, "declined"},
		{"cancelled", func(t *testing.T, as *approvalSession) string {
			return retry(`{"p":1}`, as.ask(t, `{"p":1}`), `{"action":"cancel"}`)
		}, "declined"},
		{"accept without approve", func(t *testing.T, as *approvalSession) string {
			return retry(`{"p":1}`, as.ask(t, `{"p":1}`), `{"action":"accept","content":{"approve":false}}`)
		}, "declined"},
		{"no answer", func(t *testing.T, as *approvalSession) string {
			return `{"name":"rm","arguments":{"p":1},"requestState":"` + as.ask(t, `{"p":1}`) + `","inputResponses":{}}`
		}, "declined"},
		{"other arguments", func(t *testing.T, as *approvalSession) string {
			return retry(`{"p":2}`, as.ask(t, `{"p":1}`), accept)
		}, "invalid"},
		{"tampered payload", func(t *testing.T, as *approvalSession) string {
			s := as.ask(t, `{"p":1}`)
			i := len(approvalPrefix) + 3
			c := byte('A')
			if s[i] == 'A' {
				c = 'B'
			}
			return retry(`{"p":1}`, s[:i]+string(c)+s[i+1:], accept)
		}, "invalid"},
		{"tampered mac", func(t *testing.T, as *approvalSession) string {
			s := as.ask(t, `{"p":1}`)
			return retry(`{"p":1}`, s[:len(s)-2]+"AA", accept)
		}, "invalid"},
		{"forged", func(t *testing.T, as *approvalSession) string {
			as.ask(t, `{"p":1}`)
			other := Approvals{Key: []byte(strings.Repeat("x", 32)), Principal: "alice", Run: "r1"}
			return retry(`{"p":1}`, other.seal(approvalState{Call: as.fingerprint("rm", json.RawMessage(`{"p":1}`)), Scope: other.scope(),
				Exp: time.Now().Add(time.Minute).Unix(), Nonce: "n"}), accept)
		}, "invalid"},
		{"another principal", func(t *testing.T, as *approvalSession) string {
			as.ask(t, `{"p":1}`)
			other := Approvals{Key: key, Principal: "mallory", Run: "r1"}
			return retry(`{"p":1}`, other.seal(approvalState{Call: as.fingerprint("rm", json.RawMessage(`{"p":1}`)), Scope: other.scope(),
				Exp: time.Now().Add(time.Minute).Unix(), Nonce: "n"}), accept)
		}, "invalid"},
		{"expired", func(t *testing.T, as *approvalSession) string {
			as.ask(t, `{"p":1}`)
			a := as.g.opts.Approvals
			return retry(`{"p":1}`, a.seal(approvalState{Call: as.fingerprint("rm", json.RawMessage(`{"p":1}`)), Scope: a.scope(),
				Exp: time.Now().Add(-time.Second).Unix(), Nonce: "n"}), accept)
		}, "expired"},
		{"never issued", func(t *testing.T, as *approvalSession) string {
			a := as.g.opts.Approvals
			return retry(`{"p":1}`, a.seal(approvalState{Call: as.fingerprint("rm", json.RawMessage(`{"p":1}`)), Scope: a.scope(),
				Exp: time.Now().Add(time.Minute).Unix(), Nonce: "n"}), accept)
		}, "used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := newApprovalSession(t, "0", Approvals{Key: key, Principal: "alice", Run: "r1"})
			params := tc.params(t, as)
			m, rep := as.call(t, ctx, params)
			var meta map[string]Withheld
			json.Unmarshal(m["_meta"], &meta)
			if string(m["isError"]) != "true" || rep.Approval != tc.want || meta[MetaKey].Approval != tc.want || as.runs != 0 {
				t.Fatalf("%v (report %q), %d runs; want a result not run, approval %q", m, rep.Approval, as.runs, tc.want)
			}
			if b, n := as.balance(t); b.SpentUSD != "0" || b.ReservedUSD != "0" || b.Calls != 0 || n != 0 {
				t.Errorf("a call not run cost or counted: %+v, %d history entries", b, n)
			}
		})
	}
}

func TestApprovalReplayedWithoutWindow(t *testing.T) {
	// With no idempotency window the exact retry sent twice is refused
	// the second time: the state runs its call once.
	as := newApprovalSession(t, "0", Approvals{})
	ctx := context.Background()
	state := as.ask(t, `{}`)
	as.call(t, ctx, retry(`{}`, state, accept))
	m, rep := as.call(t, ctx, retry(`{}`, state, accept))
	if as.runs != 1 || rep.Approval != "used" || string(m["isError"]) != "true" {
		t.Fatalf("replay: %v (report %q), %d runs; want refused after one run", m, rep.Approval, as.runs)
	}
}

func TestApprovalClientWithoutElicitation(t *testing.T) {
	as := newApprovalSession(t, "0", Approvals{})
	m, rep := as.call(t, context.Background(), `{"name":"rm","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}`)
	if as.runs != 0 || rep.Approval != "unavailable" || string(m["isError"]) != "true" || m["resultType"] != nil {
		t.Fatalf("a client that cannot elicit: %v (report %q), %d runs; want not run, unavailable", m, rep.Approval, as.runs)
	}
	if _, rep := as.call(t, context.Background(), `{"name":"rm","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`); rep.Approval != "asked" {
		t.Fatalf("a client that can elicit: report %q, want asked", rep.Approval)
	}
}

func TestApprovalNotAskedForSafeTool(t *testing.T) {
	as := newApprovalSession(t, "0", Approvals{})
	m, rep := as.call(t, context.Background(), `{"name":"ls","arguments":{}}`)
	if as.runs != 1 || rep.Approval != "" || string(m["content"]) != `[{"type":"text","text":"done"}]` {
		t.Fatalf("read-only call: %v (report %q), %d runs; want run without asking", m, rep.Approval, as.runs)
	}
}

func TestApprovalElicitLegacy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer *mcp.ElicitResult
		err    error
		runs   int
		want   string
	}{
		{"accept", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil, 1, "approved"},
		{"decline", &mcp.ElicitResult{Action: "decline"}, nil, 0, "declined"},
		{"cannot ask", nil, errors.New("the client does not support elicitation"), 0, "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := newApprovalSession(t, "0", Approvals{})
			var asked []*mcp.ElicitParams
			var held agent.Balance
			ctx := WithElicit(context.Background(), func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				asked = append(asked, p)
				held, _ = as.balance(t)
				return tc.answer, tc.err
			})
			_, rep := as.call(t, ctx, `{"name":"rm","arguments":{"a":[1,2]}}`)
			if len(asked) != 1 || !strings.Contains(asked[0].Message, `Arguments: {"a":[1,2]}`) || as.runs != tc.runs || rep.Approval != tc.want {
				t.Fatalf("%d asked, %d runs, report %q; want 1, %d, %q", len(asked), as.runs, rep.Approval, tc.runs, tc.want)
			}
			if held.ReservedUSD != "0" || held.Calls != 0 {
				t.Errorf("while the person was asked the ledger held %+v", held)
			}
			if d := cmp.Diff([]string{`{"name":"rm","arguments":{"a":[1,2]}}`}[:tc.runs], as.sent, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("sent upstream (-want +got):\n%s", d)
			}
		})
	}
}

func TestApprovalKeyTooShort(t *testing.T) {
	if _, err := NewSession(&Options{Approvals: Approvals{Key: []byte("short")}}); err == nil {
		t.Fatal("a 5-byte approval key was accepted")
	}
}

// FuzzApprovalState sends the retry of an approval with an arbitrary
// requestState and answer. Whatever they are, nothing runs unless the
// state is the one the guard issued and the answer approves, that state
// runs its call at most once, and every answer not run is a result, never
// an error.
func FuzzApprovalState(f *testing.F) {
	as := newApprovalSession(f, "0", Approvals{Key: []byte(strings.Repeat("f", 32)), Principal: "p", Run: "r"})
	var issued string
	m, _ := as.call(f, context.Background(), `{"name":"rm","arguments":{"x":1}}`)
	json.Unmarshal(m["requestState"], &issued)
	f.Add(issued, accept)
	f.Add(issued, `{"action":"decline"}`)
	f.Add(issued[:len(issued)-1], accept)
	f.Add(approvalPrefix+"e30.AAAA", accept)
	f.Add("pfa1.", `null`)
	f.Fuzz(func(t *testing.T, state, answer string) {
		sb, _ := json.Marshal(state)
		params := `{"name":"rm","arguments":{"x":1},"requestState":` + string(sb) + `,"inputResponses":{"` + ApprovalInputKey + `":` + answer + `}}`
		if !json.Valid([]byte(params)) {
			return
		}
		before := as.runs
		res, err := as.CallTool(context.Background(), json.RawMessage(params), func(ctx context.Context) (json.RawMessage, error) {
			as.runs++
			return json.RawMessage(`{"content":[]}`), nil
		})
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams && as.runs == before {
				return // params two readers could read apart: refused, not run
			}
			t.Fatalf("CallTool: %v", err)
		}
		if !json.Valid(res) {
			t.Fatalf("answer %q is not JSON", res)
		}
		if as.runs != before && state != issued {
			t.Fatalf("state %q ran the call", state)
		}
		if as.runs > 1 {
			t.Fatalf("the issued state ran its call %d times", as.runs)
		}
	})
}

// TestApprovalBoundToFingerprint: the requestState names the call by
// preflight's requestFingerprint, so the retry may order the arguments'
// keys otherwise (the same call), while other values are another call.
func TestApprovalBoundToFingerprint(t *testing.T) {
	as := newApprovalSession(t, "0", Approvals{})
	state := as.ask(t, `{"b":1,"a":"x"}`)
	st, ok := as.g.opts.Approvals.open(state)
	if !ok || len(st.Call) != 64 || st.Call != as.fingerprint("rm", json.RawMessage(`{"a":"x","b":1}`)) {
		t.Fatalf("sealed %+v (%v), want preflight's fingerprint of the call", st, ok)
	}
	if m, _ := as.call(t, context.Background(), retry(`{"a":"x","b":1}`, state, accept)); as.runs != 1 || string(m["isError"]) == "true" {
		t.Fatalf("retry with the keys reordered: %v, %d runs; want run once", m, as.runs)
	}
}

// TestApprovalMiddlewareNeverRunsUnapproved: the Server middleware cannot
// ask a person, so a call that needs approval is not run there (rather
// than run unapproved); other calls run.
func TestApprovalMiddlewareNeverRunsUnapproved(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mw", Version: "1"}, nil)
	runs := 0
	for _, name := range []string{"rm", "ls"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				runs++
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
	}
	srv.AddReceivingMiddleware(Server(&Options{Specs: []tools.Spec{
		{Operation: preflight.Operation{Name: "rm"}, Approval: tools.Approval{When: tools.ApprovalAlways}}}}))
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "rm", Arguments: map[string]any{}})
	if err != nil || !res.IsError || runs != 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "needs a person's approval") {
		t.Fatalf("rm through the Server middleware: %v %+v, %d runs; want not run", err, res, runs)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ls", Arguments: map[string]any{}}); err != nil || res.IsError || runs != 1 {
		t.Fatalf("ls: %v %+v, %d runs; want run", err, res, runs)
	}
}
