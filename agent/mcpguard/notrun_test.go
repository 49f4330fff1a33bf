package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
)

// TestNotRun: a call whose forward function says it did not run
// (ErrNotRun: the server refused it before any tool saw it) costs
// nothing: the error reaches the caller, the reservation is given back,
// the ledger has no entry (so no failure for the retry cap), and the call
// report has the decision but no money. Five such calls at $0.25 within
// a $1 budget: none is charged. The same call then runs and is charged
// as usual.
func TestNotRun(t *testing.T) {
	ctx := context.Background()
	s, err := mcpguard.NewSession(&mcpguard.Options{BudgetUSD: "1",
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "send"}, PriceUSD: "0.25"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SawToolsList("", json.RawMessage(`{"tools":[{"name":"send","inputSchema":{"type":"object"}}]}`))
	params := json.RawMessage(`{"name":"send","arguments":{"to":"a"}}`)
	refused := fmt.Errorf("the upstream answered HTTP 400: missing session: %w", mcpguard.ErrNotRun)
	g := s.Agent().Guard()

	for i := range 5 {
		var rep mcpguard.CallReport
		res, err := s.CallTool(mcpguard.WithCallReport(ctx, &rep), params, func(context.Context) (json.RawMessage, error) {
			return nil, refused
		})
		if !errors.Is(err, mcpguard.ErrNotRun) || res != nil {
			t.Fatalf("refused call %d: %s, %v; want the forward function's error", i, res, err)
		}
		if !rep.Decided || !rep.NotRun || rep.Report.Decision == nil || rep.Report.Called || rep.Report.Recorded ||
			rep.Report.ReservedUSD != "" || rep.Report.SettledUSD != "" || rep.How != tools.HowRan {
			t.Errorf("refused call %d: report %+v; want the decision, no money, not recorded", i, rep)
		}
		spent, err := g.SpentUSD(ctx)
		if err != nil || spent != "0" {
			t.Errorf("after refused call %d: spent %q (%v), want 0", i, spent, err)
		}
		if h, err := g.Ledger().History(ctx); err != nil || len(h) != 0 {
			t.Errorf("after refused call %d: history %+v (%v), want none", i, h, err)
		}
	}

	runs := 0
	res, err := s.CallTool(ctx, params, func(context.Context) (json.RawMessage, error) {
		runs++
		return json.RawMessage(`{"content":[{"type":"text","text":"sent"}]}`), nil
	})
	if err != nil || runs != 1 {
		t.Fatalf("the call once the server takes it: %s, %v after %d runs", res, err, runs)
	}
	if spent, err := g.SpentUSD(ctx); err != nil || spent != "0.25" {
		t.Errorf("after the call ran: spent %q (%v), want 0.25", spent, err)
	}
}

// TestNotRunRetry: the retry of a multi-round trip (input_required, then
// the client's retry with the requestState) that the server refuses
// before running it ends the call as any failure does: charged, since
// its first request reached the tool. Only a call's first request is
// given back unrecorded.
func TestNotRunRetry(t *testing.T) {
	ctx := context.Background()
	s, err := mcpguard.NewSession(&mcpguard.Options{BudgetUSD: "1",
		Specs: []tools.Spec{{Operation: preflight.Operation{Name: "ask"}, PriceUSD: "0.25"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SawToolsList("", json.RawMessage(`{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}`))
	ask := `{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{}}},"requestState":"s1"}`
	if res, err := s.CallTool(ctx, json.RawMessage(`{"name":"ask","arguments":{"x":1}}`), func(context.Context) (json.RawMessage, error) {
		return json.RawMessage(ask), nil
	}); err != nil || string(res) != ask {
		t.Fatalf("first round: %s, %v", res, err)
	}
	_, err = s.CallTool(ctx, json.RawMessage(`{"name":"ask","arguments":{"x":1},"inputResponses":{"q":{"action":"accept"}},"requestState":"s1"}`),
		func(context.Context) (json.RawMessage, error) {
			return nil, fmt.Errorf("the upstream answered HTTP 400: %w", mcpguard.ErrNotRun)
		})
	if !errors.Is(err, mcpguard.ErrNotRun) {
		t.Fatalf("refused retry: %v; want the forward function's error", err)
	}
	g := s.Agent().Guard()
	spent, err := g.SpentUSD(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := g.Ledger().History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if spent != "0.25" || len(hist) != 1 || hist[0].Outcome == preflight.OutcomeSuccess {
		t.Fatalf("spent %s, history %+v; want 0.25 spent and one failed entry", spent, hist)
	}
}
