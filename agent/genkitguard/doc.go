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
// # Failures
//
// The outcome of a call that ran is classified by Options.Classify. By
// default (adapt.DefaultClassify) a tool's error is classified by
// [agent.ClassifyError] and passed on unchanged (Genkit then ends the
// Generate, as it would without the guard), and a response is a failure
// when its output carries one in band ([adapt.InBand]): an output
// {"error": …}, the way a Genkit tool (or a tool middleware that turns
// errors into outputs) keeps a failure from ending the Generate.
// Transient or terminal is read from a "status" member or the HTTP
// status the error's text names; a failure without one is transient. A
// failure is never saved for reuse.
//
// # Interrupts
//
// A tool that interrupts (ToolContext.Interrupt, to ask a person first)
// has not done its work: the call is neither a failure nor a charge, its
// reservation is given back and the interrupt passed on. The call
// restarted with the person's answer (the tool's RestartWith, then
// ai.WithToolRestarts, on the same Guard) is decided and charged then,
// once. Options.InterruptOnDefer is the guard's own interrupt, for a call
// it defers: raise the budget (Session().Guard().RaiseBudget) and restart
// the call, which is then decided again.
//
// # Approvals
//
// A call whose tool needs a person's approval by its spec
// (tools.Spec.Approval: "always", "destructive", or above a cost) is
// asked with a Genkit tool interrupt before anything runs or is
// reserved: the Generate ends "interrupted", the tool request's interrupt
// metadata is the call's adapt.Approval (tool, arguments,
// estimatedCostUsd, reason, requestFingerprint, ticket) and "message",
// the question as a sentence. The person answers by restarting the call
// (RestartWith, ai.WithToolRestarts) with resumed metadata
// {[ApprovalKey]: true} (or false), on the same Guard; for a tool request
// without a ref, add the interrupt's "ticket" to the resumed metadata. Genkit's
// interrupts enforce nothing by themselves (a restart may carry other
// input, or be sent twice): the guard runs the restarted call only when
// the approval asked for that tool request is answered true for the same
// tool and arguments (adapt.Approvals.Answer), once, decided as any call
// (the budget still holds); a decline, a restart with replaced input, or
// one sent again runs nothing and spends nothing. Answering the
// interrupt with a response instead (RespondWith) runs nothing either.
//
// Genkit ends a Generate on a tool's Go error: [ErrorsToModel], put
// before the guard, hands the error to the model as {"error": …} instead
// and spares interrupts.
//
// # Without specs
//
// A tool no spec names is known by its Genkit definition: its name and
// its input schema, so that with nil options arguments that break the
// schema are not run and a call that failed terminally is not retried.
// Genkit does not say which tools are read-only, so such tools are
// side-effecting (never reused or coalesced) unless
// Options.Defaults.Operation.Effects says otherwise; a spec that gives
// only a tool's effects (and its price) is enough, its schema still
// taken from Genkit.
//
// A withheld retry names the call it repeats by the tool request's ref,
// the one the model gave it.
package genkitguard
