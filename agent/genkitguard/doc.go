// Package genkitguard puts preflight in front of the tool calls of a
// Firebase Genkit for Go application (github.com/firebase/genkit/go,
// tested with v1.13.1; tool middleware, ai.Hooks.WrapTool, exists from
// v1.7.0). One option guards the tools of a Generate call:
//
//	genkit.Generate(ctx, g, ai.WithUse(guard), …)
//
// A [Guard] is an ai.Middleware holding one [tools.Session]: one ledger,
// budget and call limit, shared by every Generate it is used with. Use one
// per run (or per conversation whose calls may reuse each other's
// results). Genkit runs the tool requests of one model response in
// parallel; the session reserves the money of calls in flight, so parallel
// calls never overspend together, and identical read-only calls in flight
// run once.
//
// Each call is decided by its tool name and input, through the catalog
// that Options.Specs describe. A call that runs is answered with the
// tool's own response, saved for reuse; a reused or coalesced call with the
// saved response (output, content and metadata); a call that is not run
// with a normal tool response, never a Go error, since an error ends the
// whole Generate: its output is {"error": "not run: …; … instead",
// "preflight": the decision}. With Options.InterruptOnDefer, a call
// deferred for the budget or the call limit is an interrupt instead:
// Generate returns with FinishReason "interrupted" and the tool request
// in ModelResponse.Interrupts(), its interrupt metadata the same object,
// so that the application can ask a person (raise the budget, then
// restart the call on a new Guard or approve a different one) rather
// than have the model read it.
//
// The outcome of a call that ran is classified by Options.Classify; by
// default a tool's error is classified by [agent.ClassifyError] and
// passed on unchanged (Genkit then ends the Generate, as it would
// without the guard), and any response is a success.
package genkitguard
