package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
)

// Two workers of one run on a shared ledger store (one in memory here,
// standing in for Redis or PostgreSQL): the first starts a call that
// must wait for its user, and hands it off as JSON; the worker that gets
// the user's answer resumes the call and finishes it. It is charged once
// and its result saved where the second worker can reuse it.
func ExampleSession_Resume() {
	ctx := context.Background()
	store := agent.NewMemoryLedgerStore(nil)
	set, _ := tools.NewSet(tools.Spec{}, tools.Spec{PriceUSD: "0.10", TTLSeconds: "600",
		Operation: preflight.Operation{Provider: tools.DefaultProvider, Name: "quote", Effects: preflight.EffectsReadOnly}})
	var workers []*tools.Session
	for range 2 {
		s, err := tools.NewSession(set, &tools.SessionOptions{RunID: "run-3", Guard: agent.GuardOptions{Store: store, BudgetUSD: "1"}})
		if err != nil {
			panic(err)
		}
		workers = append(workers, s)
	}
	args := json.RawMessage(`{"symbol":"AAA"}`)
	r, _, err := workers[0].Start(ctx, "quote", args)
	if err != nil || r == nil {
		panic(fmt.Sprint("not allowed: ", err))
	}
	wire, _ := json.Marshal(r.Handoff())

	var h tools.Handoff
	if err := json.Unmarshal(wire, &h); err != nil {
		panic(err)
	}
	q, err := workers[1].Resume(h)
	if err != nil {
		panic(err)
	}
	r.Forget()
	ans, err := q.Finish(ctx, []byte(`{"price":"101.25"}`), preflight.OutcomeSuccess, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(ans.How, string(ans.Result))
	_, again, _ := workers[1].Start(ctx, "quote", args)
	fmt.Println(again.How, string(again.Result))
	spent, _ := workers[0].Guard().SpentUSD(ctx)
	fmt.Println("spent $" + spent)
	// Output:
	// ran {"price":"101.25"}
	// reused {"price":"101.25"}
	// spent $0.1
}
