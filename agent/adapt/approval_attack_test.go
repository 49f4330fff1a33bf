package adapt

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/tools"
)

// TestApprovalMessageEscapesHidden: characters that hide or reorder text
// are shown as the JSON escapes that name them, and the arguments shown
// still read as the same JSON value.
func TestApprovalMessageEscapesHidden(t *testing.T) {
	args := "{\"to\":\"al\u202eice\",\"z\":\"a\u200bb\U000E0041\",\"ok\":\"\u00e9 \u4e2d\"}"
	msg := (&Approval{Tool: "send", Arguments: json.RawMessage(args), EstimatedCostUSD: "1", Reason: "r"}).Message()
	shown, _, _ := strings.Cut(strings.SplitN(msg, "\nArguments: ", 2)[1], "\n")
	want := `{"to":"al\u202eice","z":"a\u200bb\udb40\udc41","ok":"` + "\u00e9 \u4e2d" + `"}`
	if shown != want {
		t.Fatalf("shown %q, want %q", shown, want)
	}
	var a, b any
	if json.Unmarshal([]byte(shown), &a) != nil || json.Unmarshal([]byte(args), &b) != nil || !jsonEqual(a, b) {
		t.Fatalf("the arguments shown %s do not read as %s", shown, args)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestApprovalsConcurrent: one ticket answered by eight goroutines at
// once approves once; eight calls at once under one approved context run
// once.
func TestApprovalsConcurrent(t *testing.T) {
	s, classify, err := NewSession(&Options{BudgetUSD: "10", Specs: []tools.Spec{
		{Operation: preflight.Operation{Name: "rm"}, PriceUSD: "1", Approval: tools.Approval{When: tools.ApprovalAlways}}}})
	if err != nil {
		t.Fatal(err)
	}
	var a Approvals
	args := json.RawMessage(`{"p":1}`)
	ap, _ := a.Ask(s, "rm", args)
	var approved, runs atomic.Int32
	var actx atomic.Value
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, st, _ := a.Answer(context.Background(), s, ap.Ticket, "rm", args, true); st == ApprovalApproved {
				approved.Add(1)
				actx.Store(c)
			}
		}()
	}
	wg.Wait()
	if approved.Load() != 1 {
		t.Fatalf("one ticket approved %d times, want 1", approved.Load())
	}
	ctx := actx.Load().(context.Context)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Call(ctx, s, classify, "rm", args, func(context.Context) ([]byte, error) { runs.Add(1); return []byte(`{}`), nil })
		}()
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("eight calls under one approval ran %d times, want 1", runs.Load())
	}
}

// TestApprovalMessageToolNameShownPlainly: the tool name (model-written
// when the tool is not listed, upstream-written when it is) is shown with
// its hidden characters escaped too, and cannot break the message into
// lines of its own: a name holding a newline and a made-up "Arguments:"
// line, a right-to-left override or a zero-width space reads as the name
// it is.
func TestApprovalMessageToolNameShownPlainly(t *testing.T) {
	for _, name := range []string{
		"send_email\nArguments: {}\nEstimated cost: $0",
		"delete\u200brepo",
		"rm\u202e",
		"a\u2028b",
	} {
		a := &Approval{Tool: name, Arguments: json.RawMessage(`{"to":"x"}`), EstimatedCostUSD: "1", Reason: "every call of " + name + " needs approval"}
		msg := a.Message()
		if n := strings.Count(msg, "\n"); n != 4 {
			t.Errorf("tool %q: the message has %d line breaks, want the 4 of its five lines:\n%s", name, n, msg)
		}
		if strings.ContainsAny(msg, "\u200b\u202e\u2028") {
			t.Errorf("tool %q: hidden characters shown as they are: %q", name, msg)
		}
	}
}
