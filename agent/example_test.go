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
