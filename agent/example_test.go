package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
)

// A search tool guarded by preflight: the second identical search is
// answered from the saved result, and the tool runs once.
func ExampleGuard_Call() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ledger := agent.NewLedger(&agent.LedgerOptions{Now: func() time.Time { return now }})
	guard, err := agent.NewGuard(ledger, &agent.GuardOptions{BudgetUSD: "0.05"})
	if err != nil {
		panic(err)
	}

	saved := map[string]string{} // the agent's own result store
	search := func(ctx context.Context) (agent.Completion, error) {
		saved["mem:1"] = "10 results about Go generics"
		return agent.Completion{ResultReference: "mem:1"}, nil
	}
	for i, step := range []string{"s1", "s2"} {
		req := preflight.ToolCallRequest{
			RunID:  "run-42",
			StepID: step,
			Tool: preflight.ToolCall{
				Provider:                 "search",
				Operation:                "web_search",
				Request:                  json.RawMessage(`{"query":"go generics"}`),
				EstimatedExternalCostUSD: "0.005",
			},
			Task:                &preflight.Task{GoalHash: "goal-7"},
			Capabilities:        &preflight.Capabilities{CanReusePriorResult: true},
			FreshnessTTLSeconds: "600",
		}
		rep, err := guard.Call(context.Background(), req, search)
		if err != nil {
			panic(err)
		}
		fmt.Println(step, rep.Decision.Verdict, rep.Decision.ReasonCodes, "called:", rep.Called)
		if rep.ReuseReference != "" {
			fmt.Println("  reused:", saved[rep.ReuseReference])
		}
		now = now.Add(time.Duration(i+1) * 30 * time.Second)
	}
	spent, err := guard.SpentUSD(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("spent:", spent)
	// Output:
	// s1 allow [NO_PROVEN_WASTE] called: true
	// s2 reuse [REUSE_FRESH_RESULT] called: false
	//   reused: 10 results about Go generics
	// spent: 0.005
}

// A paid search deferred for the budget runs once the budget is raised,
// while the Guard keeps what was spent.
func ExampleGuard_RaiseBudget() {
	guard, err := agent.NewGuard(nil, &agent.GuardOptions{BudgetUSD: "0.10"})
	if err != nil {
		panic(err)
	}
	search := func(step, query string) preflight.ToolCallRequest {
		return preflight.ToolCallRequest{
			RunID: "run-7", StepID: step,
			Tool: preflight.ToolCall{Provider: "search", Operation: "web_search",
				Request: json.RawMessage(`{"query":"` + query + `"}`), EstimatedExternalCostUSD: "0.08"},
		}
	}
	run := func(context.Context) (agent.Completion, error) { return agent.Completion{}, nil }
	ctx := context.Background()
	for _, step := range []string{"r1", "r2"} {
		rep, err := guard.Call(ctx, search(step, step), run)
		if err != nil {
			panic(err)
		}
		fmt.Println(step, rep.Decision.Verdict, rep.ReasonCodes(), "called:", rep.Called)
	}
	budget, err := guard.RaiseBudget("0.10") // a person allowed ten cents more
	if err != nil {
		panic(err)
	}
	rep, err := guard.Call(ctx, search("r3", "r2"), run)
	if err != nil {
		panic(err)
	}
	spent, _ := guard.SpentUSD(ctx)
	fmt.Println("budget:", budget)
	fmt.Println("r3", rep.Decision.Verdict, "called:", rep.Called, "spent:", spent)
	// Output:
	// r1 allow [NO_PROVEN_WASTE] called: true
	// r2 defer [BUDGET_EXCEEDED] called: false
	// budget: 0.2
	// r3 allow called: true spent: 0.16
}
