// Package einoguard puts preflight in front of the tool calls of a
// CloudWeGo eino agent (github.com/cloudwego/eino, tested with v0.9.13),
// as a tool middleware. One line guards a ToolsNode, a ReAct agent
// (react.AgentConfig.ToolsConfig) or an ADK ChatModelAgent
// (adk.ToolsConfig embeds the same ToolsNodeConfig):
//
//	ToolCallMiddlewares: []compose.ToolMiddleware{guard.Middleware()},
//
// A [Guard] is one [tools.Session]: one ledger, budget and call limit. Use
// one per run (or per conversation whose calls may reuse each other's
// results). eino runs the tool calls of one model turn in parallel; the
// session reserves the money of calls in flight, so parallel calls never
// overspend together, and identical read-only calls in flight run once.
//
// Each call is decided by its tool name (ToolInput.Name, after eino
// resolved aliases) and its JSON arguments, through the catalog that
// Options.Specs describe. A call that runs is answered with the tool's own
// result, saved for reuse; a reused or coalesced call with the saved
// result, byte for byte; a call that is not run (block, defer, reduce-scope
// advice under agent.SkipAdvised) with a normal tool result, never a Go
// error, since an error would end the whole run: a JSON object whose
// "error" member is one sentence for the model ("not run: …; … instead")
// and whose "preflight" member is the decision (verdict, reason codes,
// matched call, issues).
//
// # Failures
//
// The outcome of a call that ran is classified by Options.Classify. By
// default (adapt.DefaultClassify) an error from the tool is classified by
// [agent.ClassifyError] and passed on unchanged (eino then ends the run,
// as it would without the guard: put [ErrorsToModel] before the guard to
// hand it to the model as text instead), and a result is a failure when it
// carries one in band ([adapt.InBand]): a JSON object with an "error"
// member, or a text naming an HTTP error status ("HTTP 503", "422
// Unprocessable Entity") or beginning with "error" or "failed", which is
// what a tool wrapped by utils.WrapToolWithErrorHandler returns in place
// of its error when the handler keeps the error's text. Transient or
// terminal is read from the status; a failure without one is transient.
// A failure is never saved for reuse. A handler that rewords errors
// beyond recognition, or a tool whose successes look like failures,
// needs a Classify.
//
// # Interrupts
//
// A tool that interrupts (tool.Interrupt, tool.StatefulInterrupt,
// compose.Interrupt) has not done its work: the call is neither a
// failure nor a charge, its reservation is given back and the interrupt
// is passed on unchanged. When the run is resumed
// (adk.Runner.ResumeWithParams, a graph's checkpoint) the call passes
// the middleware again and is decided and charged then, once.
//
// With Options.InterruptOnDefer, a call deferred for the budget or the
// call limit is itself an interrupt (tool.Interrupt, its info the
// withheld result's JSON) instead of a result the model reads: raise the
// budget (Session().Guard().RaiseBudget) and resume, and the call is
// decided again.
//
// # Approvals
//
// A call whose tool needs a person's approval by its spec
// (tools.Spec.Approval: "always", "destructive", or above a cost) is
// asked with an eino interrupt before anything runs or is reserved: the
// middleware ends the call with tool.StatefulInterrupt, its info the
// call's adapt.Approval as JSON (tool, arguments, estimatedCostUsd,
// reason, requestFingerprint, ticket), kept as the interrupt's state in
// the checkpoint. The person answers by resuming the run with the
// interrupt's id as a target and true (or false) as its data
// (adk.Runner.ResumeWithParams, a graph's resume); a call the resume
// does not target is asked again. The resumed call runs only when its
// approval is answered true for the same tool and arguments
// (adapt.Approvals.Answer), once, decided as any call (the budget still
// holds); a decline, a checkpoint whose arguments were altered, or one
// resumed again (a stored copy) runs nothing and spends nothing.
//
// Streamed results (StreamableTool, EnhancedStreamableTool) are gathered
// before they are handed on, so that they can be saved and reused: the
// model still gets the whole result, as one chunk. Calls eino hands to
// ToolsNodeConfig.UnknownToolsHandler do not pass through tool middleware
// and are not guarded.
//
// # Without specs
//
// A tool no spec names is known by its name from its first call, or,
// after Guard.Describe (given the agent's tools before the run), by its
// ToolInfo: its name and its parameters' JSON schema. With nil options
// a call that failed terminally is then not retried, and after Describe
// arguments that break the schema are not run. eino does not say which
// tools are read-only, so such tools are side-effecting (never reused or
// coalesced) unless Options.Defaults.Operation.Effects says otherwise; a
// spec that gives only a tool's effects (and its price) is enough, its
// schema taken from Describe.
//
// A withheld retry names the call it repeats by eino's tool call id
// (ToolInput.CallID), the one the model gave it.
package einoguard
