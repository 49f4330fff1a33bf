package adapt_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
)

// An adapter whose framework can pause a run for a person asks with
// Ask, shows the Approval through the framework's own idiom, and hands
// the person's answer to Answer when the framework resumes the call: the
// approved call is then decided and run once under the context Answer
// returns; a declined one is not run.
func ExampleApprovals() {
	s, classify, err := adapt.NewSession(&adapt.Options{BudgetUSD: "5", Specs: []tools.Spec{{
		Operation: preflight.Operation{Name: "delete_repo", Effects: preflight.EffectsDestructive},
		PriceUSD:  "0.10", Approval: tools.Approval{When: tools.ApprovalDestructive}}}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var approvals adapt.Approvals
	run := func(context.Context) ([]byte, error) { fmt.Println("deleting"); return []byte(`{"deleted":true}`), nil }

	args := json.RawMessage(`{"repo":"demo"}`)
	ap, _ := approvals.Ask(s, "delete_repo", args)
	fmt.Println(ap.Tool, string(ap.Arguments), "$"+ap.EstimatedCostUSD)
	fmt.Println(ap.Reason)

	// The person approves; the framework resumes the call.
	actx, status, _ := approvals.Answer(ctx, s, ap.Ticket, "delete_repo", args, true)
	fmt.Println(status)
	ans, _, _ := adapt.Call(actx, s, classify, "delete_repo", args, run)
	fmt.Println(ans.How, string(ans.Result))

	// The same answer again runs nothing.
	_, status, w := approvals.Answer(ctx, s, ap.Ticket, "delete_repo", args, true)
	fmt.Println(status, w.Preflight.Approval)
	spent, _ := s.Guard().SpentUSD(ctx)
	fmt.Println("spent", spent)
	// Output:
	// delete_repo {"repo":"demo"} $0.10
	// delete_repo is destructive (by its catalog effects or its MCP destructiveHint) and needs approval
	// approved
	// deleting
	// ran {"deleted":true}
	// invalid invalid
	// spent 0.1
}
