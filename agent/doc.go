// Package agent keeps the caller's side of preflight's tool-call contract for
// Go agent runtimes, in process: a [Ledger] of what really happened, kept in
// a [LedgerStore], and a [Guard] that asks preflight to decide before every
// tool call, against the default catalog or the caller's own
// [preflight.Catalog] (GuardOptions.Catalog), and applies the decision.
//
// It is the bottom of three layers: package agent/tools guards calls named
// by a tool name and raw JSON arguments on top of a Guard, and package
// agent/adapt is the kit framework adapters are built from. Neither is
// known here.
//
// preflight's Decide is stateless: the caller keeps the history
// (fingerprints, outcomes, ages, result references, goal hashes), records an
// outcome only after the real call completed, and applies the decision. This
// package does that bookkeeping correctly so an agent loop does not have to.
// It calls preflight only through its public API (Decide and the request
// and decision types). For money it uses preflight's internal exact-decimal
// package, the one Decide's own budget comparisons use: a second decimal
// implementation here could round a sum differently from the comparison it
// feeds, and exporting one would widen preflight's public surface for a
// single consumer.
//
// # Wiring it into an agent loop
//
//	ledger := agent.NewLedger(nil) // one per customer and run
//	guard, _ := agent.NewGuard(ledger, &agent.GuardOptions{BudgetUSD: "0.50"})
//	for _, step := range plan {
//		req := preflight.ToolCallRequest{
//			RunID: runID, StepID: step.ID, Tool: step.Call,
//			Task:                &preflight.Task{GoalHash: goal},
//			Capabilities:        &preflight.Capabilities{CanReusePriorResult: true},
//			FreshnessTTLSeconds: "600",
//		}
//		rep, err := guard.Call(ctx, req, func(ctx context.Context) (agent.Completion, error) {
//			ref, err := runTool(ctx, step) // saves the result, returns where
//			return agent.Completion{ResultReference: ref}, err
//		})
//		if rep.Decision == nil {
//			return err // a malformed request, or ctx is done
//		}
//		if !rep.Called {
//			log.Println(step.ID, rep.Decision.Verdict, rep.Decision.ReasonCodes, rep.ReuseReference)
//		}
//	}
//
// # Two phases and coalescing
//
// [Guard.Begin] and [Permit.End] split a call for runtimes with before and
// after hooks; identical read-only calls in flight are coalesced: the
// Report of the later one carries the call in flight (Report.InFlight) to
// wait on. [Report.ReasonCodes] are the codes to show for a call not run.
//
// # Words
//
// A result is always a tool's own output (saved somewhere the caller
// chooses, found again by its ResultReference); a [Completion] is the
// caller's account of a call that ran (outcome, reference, cost); a
// [Report] is what the Guard did. "Store" in this package means a
// [LedgerStore] only: the stores of results are agent/tools'.
//
// # Parallel calls and the budget
//
// A stateless budget check cannot stop two parallel calls from both seeing
// "affordable": each is compared with the same free budget. Money promised
// to calls in flight must travel in Budget.ReservedUSD. A [Guard] does this
// for the calls made through it (see "Budget reservation" on [Guard]); a
// caller that runs tools around the Guard must add their estimates to
// ReservedUSD itself. A running Guard's budget is raised (or lowered) with
// [Guard.RaiseBudget] and [Guard.SetBudget], for example once a person
// allowed more spending; what was spent is kept.
//
// # What it never does
//
// It never runs a tool on its own, never retries, never sends anything over
// a network, never writes files and keeps no package-level state: every
// piece of state lives in a Ledger or Guard the caller created. It reads the
// clock only through the Ledger's clock function.
package agent
