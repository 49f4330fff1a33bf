package adapt

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
)

// TestApprovals: an approval asked by Ask runs its call once through Call
// when Answer accepts it for the same call, and nothing in every other
// case (declined, other arguments, replayed, expired, never asked); no
// money is reserved while a call waits, the budget still holds for an
// approved call.
func TestApprovals(t *testing.T) {
	store := agent.NewMemoryLedgerStore(nil)
	s, classify, err := NewSession(&Options{BudgetUSD: "1.50", LedgerStore: store, Specs: []tools.Spec{
		{Operation: preflight.Operation{Name: "rm"}, PriceUSD: "1", Approval: tools.Approval{When: tools.ApprovalAlways}},
		{Operation: preflight.Operation{Name: "ls"}, PriceUSD: "0.25"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runs := map[string]int{}
	run := func(args string) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { runs[args]++; return []byte(`{}`), nil }
	}
	var a Approvals
	call := func(ctx context.Context, args string) (*Withheld, error) {
		_, w, err := Call(ctx, s, classify, "rm", json.RawMessage(args), run(args))
		return w, err
	}

	if ap, w := a.Ask(s, "ls", json.RawMessage(`{}`)); ap != nil || w != nil {
		t.Fatalf("Ask ls: %+v %+v; want no approval needed", ap, w)
	}
	ap, w := a.Ask(s, "rm", json.RawMessage(`{"path": "/a", "n": 1.0}`))
	if ap == nil || w != nil || ap.Tool != "rm" || ap.EstimatedCostUSD != "1" || ap.Reason == "" || ap.RequestFingerprint == "" || ap.Ticket == "" {
		t.Fatalf("Ask rm: %+v %+v", ap, w)
	}
	if b := balance(t, store); b.ReservedUSD != "0" || b.Calls != 0 {
		t.Errorf("balance %+v while the call waits; want nothing reserved, no call", b)
	}
	// Without an answer, Call does not run it.
	if w, err := call(ctx, `{"path":"/a","n":1}`); w == nil || err != nil || w.Preflight.Approval != ApprovalUnavailable {
		t.Fatalf("unanswered: %+v %v", w, err)
	}
	// Altered arguments: invalid, and the ticket is used up.
	if _, st, w := a.Answer(ctx, s, ap.Ticket, "rm", json.RawMessage(`{"path":"/b","n":1}`), true); st != ApprovalInvalid || w == nil || w.Preflight.Approval != ApprovalInvalid {
		t.Fatalf("altered: %s %+v", st, w)
	}
	if _, st, _ := a.Answer(ctx, s, ap.Ticket, "rm", json.RawMessage(`{"path":"/a","n":1}`), true); st != ApprovalInvalid {
		t.Fatalf("after an altered answer: %s; want invalid (the ticket is used up)", st)
	}

	// Approved (same call, keys reordered, number spelled otherwise): runs once.
	ap, _ = a.Ask(s, "rm", json.RawMessage(`{"path": "/a", "n": 1.0}`))
	actx, st, w := a.Answer(ctx, s, ap.Ticket, "rm", json.RawMessage(`{"n":1,"path":"/a"}`), true)
	if st != ApprovalApproved || w != nil {
		t.Fatalf("approve: %s %+v", st, w)
	}
	if w, err := call(actx, `{"n":1,"path":"/a"}`); w != nil || err != nil {
		t.Fatalf("approved call: %+v %v", w, err)
	}
	if w, err := call(actx, `{"n":1,"path":"/a"}`); w == nil || err != nil || w.Preflight.Approval != ApprovalUnavailable {
		t.Fatalf("second call under one approval: %+v %v; want not run", w, err)
	}
	if _, st, _ := a.Answer(ctx, s, ap.Ticket, "rm", json.RawMessage(`{"n":1,"path":"/a"}`), true); st != ApprovalInvalid {
		t.Fatalf("replayed: %s; want invalid", st)
	}
	// Declined: runs nothing.
	ap, _ = a.Ask(s, "rm", json.RawMessage(`{"path":"/c"}`))
	if _, st, w := a.Answer(ctx, s, ap.Ticket, "rm", json.RawMessage(`{"path":"/c"}`), false); st != ApprovalDeclined || w == nil || w.Preflight.Approval != ApprovalDeclined {
		t.Fatalf("declined: %s %+v", st, w)
	}
	// Approved but over the budget (1 spent of 1.50): decided, not run.
	ap, _ = a.Ask(s, "rm", json.RawMessage(`{"path":"/d"}`))
	actx, st, _ = a.Answer(ctx, s, ap.Ticket, "rm", json.RawMessage(`{"path":"/d"}`), true)
	if w, err := call(actx, `{"path":"/d"}`); st != ApprovalApproved || w == nil || err != nil || w.Preflight.Decision == "" {
		t.Fatalf("approved over budget: %s %+v %v; want a decision withholding it", st, w, err)
	}
	// Expired.
	b := Approvals{Wait: time.Nanosecond}
	ap, _ = b.Ask(s, "rm", json.RawMessage(`{"path":"/e"}`))
	time.Sleep(time.Millisecond)
	if _, st, _ := b.Answer(ctx, s, ap.Ticket, "rm", json.RawMessage(`{"path":"/e"}`), true); st != ApprovalExpired {
		t.Fatalf("expired: %s", st)
	}

	want := map[string]int{`{"n":1,"path":"/a"}`: 1}
	if len(runs) != 1 || runs[`{"n":1,"path":"/a"}`] != 1 {
		t.Errorf("runs %v; want %v", runs, want)
	}
	if b := balance(t, store); b.SpentUSD != "1" || b.ReservedUSD != "0" || b.Calls != 1 {
		t.Errorf("balance %+v; want 1 spent by one call, nothing reserved", b)
	}
}

func balance(t *testing.T, st agent.LedgerStore) agent.Balance {
	t.Helper()
	s, err := st.StateOf(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return s.Balance
}

// TestApprovalsByKey: AskFor notes an approval under the framework's call
// id until it is answered; the same id asked again voids the earlier one.
func TestApprovalsByKey(t *testing.T) {
	s, _, err := NewSession(&Options{Specs: []tools.Spec{
		{Operation: preflight.Operation{Name: "rm"}, Approval: tools.Approval{When: tools.ApprovalAlways}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var a Approvals
	first, _ := a.AskFor("call-1", s, "rm", json.RawMessage(`{"path":"/a"}`))
	if got := a.TicketFor("call-1"); got != first.Ticket {
		t.Fatalf("TicketFor: %q; want %q", got, first.Ticket)
	}
	second, _ := a.AskFor("call-1", s, "rm", json.RawMessage(`{"path":"/b"}`))
	if _, st, _ := a.Answer(ctx, s, first.Ticket, "rm", json.RawMessage(`{"path":"/a"}`), true); st != ApprovalInvalid {
		t.Fatalf("the voided approval: %s; want invalid", st)
	}
	if _, st, _ := a.Answer(ctx, s, a.TicketFor("call-1"), "rm", json.RawMessage(`{"path":"/b"}`), true); st != ApprovalApproved {
		t.Fatalf("the approval asked last: %s; want approved", st)
	}
	if got := a.TicketFor("call-1"); got != "" || second.Ticket == "" {
		t.Fatalf("TicketFor after the answer: %q; want none", got)
	}
}
