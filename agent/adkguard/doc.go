// Package adkguard puts preflight in front of the tool calls of a Google
// ADK-Go agent (google.golang.org/adk/v2, tested with v2.2.0). One line
// guards every agent of a runner, as a plugin (put it first among the
// plugins):
//
//	PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin()}},
//
// or one agent, as callbacks of its llmagent.Config:
//
//	BeforeModelCallbacks: []llmagent.BeforeModelCallback{guard.BeforeModel},
//	BeforeToolCallbacks:  []llmagent.BeforeToolCallback{guard.BeforeTool},
//	OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{guard.OnToolError},
//	AfterToolCallbacks:   []llmagent.AfterToolCallback{guard.AfterTool},
//
// An ADK MCP toolset (mcptoolset.Config.Client) built on a go-sdk client
// guarded by agent/mcpguard is guarded too, by the MCP middleware, and
// needs neither; ADK turns an MCP result with isError, a withheld call's
// included, into a tool error, so there the model reads the "not run: …"
// sentence as the error's details and error callbacks see it.
//
// A [Guard] is one [tools.Session]: one ledger, budget and call limit. Use
// one per run (or per conversation whose calls may reuse each other's
// results). ADK runs the function calls of one model response in
// parallel; the session reserves the money of calls in flight, so
// parallel calls never overspend together, and identical read-only calls
// in flight run once. Each call is known by the tool context ADK makes
// for it, not by its function call id, so two calls of one response that
// share an id (a provider's bug) stay two calls, each answered with its
// own result.
//
// The before hook decides each call by its tool name and arguments,
// through the catalog that Options.Specs describe. A call that may run
// runs, and the after hook records its outcome (classified by
// Options.Classify) and saves its result; a reused or coalesced call is
// answered with the saved result; a call that is not run with a normal
// function response, never a Go error (which ADK would hand to error
// callbacks and plugins): {"withheld": "not run: …; … instead",
// "preflight": the decision}. Its sentence is not under "error", so that
// ADK's telemetry does not mark the call's execute_tool span as a failed
// tool call: it was decided, not failed (a streaming tool's response is
// this object's JSON, under ADK's "result").
//
// # Failures
//
// A tool's Go error reaches the error and after hooks before ADK turns it
// into {"error": …} for the model; it is classified by
// agent.ClassifyError (transient or terminal by its HTTP status). The
// error hook notes it even when a later error callback turns it into a
// response, as plugin/retryandreflect does, so that the call is still
// recorded as the failure it was; and a response that carries a failure
// in band (adapt.InBand: {"error": …}, retryandreflect's response) is one
// too. A failure is never saved for reuse. Options.Classify overrides all
// of this.
//
// # Confirmation
//
// A call that asks a person to confirm it (functiontool.Config's
// RequireConfirmation, tool.ErrConfirmationRequired) or that was refused
// is neither a failure nor a charge: its reservation is given back, and
// the confirmed call, when ADK runs it again, is decided and charged
// then, once.
//
// # Approvals
//
// A call whose tool needs a person's approval by its spec
// (tools.Spec.Approval: "always", "destructive", or above a cost) is
// asked with ADK's own tool confirmation, from the before hook, before
// anything runs or is reserved: the hook calls the tool context's
// RequestConfirmation with the call's adapt.Approval as the payload (tool,
// arguments, estimated cost, reason, requestFingerprint) and answers the
// call with approval "asked", so that ADK emits an
// adk_request_confirmation call and ends the run. When the run is resumed
// with the person's answer ({"confirmed": true} or false), the call ADK
// dispatches again is checked against the approval asked for that
// function call id (adapt.Approvals.Answer): approved and the same tool
// and arguments, it is decided as any call (the budget still holds) and
// runs once; declined, answered again, or re-dispatched with other
// arguments, it runs nothing and spends nothing. The tool itself never
// runs before the answer, whatever ADK does with the confirmation.
// Streaming function tools are not asked (ADK runs them without tool
// callbacks and re-dispatches a confirmed call with the agent's own
// tools, not the ones the model hook wrapped, so the resumed call would
// run unguarded): a streaming call that needs approval is not run
// (approval "unavailable").
//
// # Other callbacks and streaming tools
//
// The model hook wraps each function tool of the request, so that the
// after hook knows whether the tool itself ran: a result another
// before-callback substituted (an agent's callback, a later plugin) is
// neither charged nor saved. It also guards streaming function tools
// (functiontool.NewStreaming), which ADK runs without tool callbacks:
// their chunks are gathered, saved and handed on as one. Without the
// model hook (tool callbacks alone) streaming tools are not guarded, and
// a substituted result is recorded as the tool's. A wrapped tool's call
// is recorded as soon as the tool returns, so an after-callback ahead of
// the guard's that returns a result (ADK then skips the guard's) leaves
// no call unsettled. Live (bidirectional) sessions are untested.
//
// # Without specs
//
// A tool no spec names is known by its ADK declaration: its name and its
// input schema (ParametersJsonSchema), so that with nil options
// arguments that break the schema are not run and a call that failed
// terminally is not retried. ADK does not say which tools are
// read-only, so such tools are side-effecting (never reused or
// coalesced) unless Options.Defaults.Operation.Effects says otherwise; a
// spec that gives only a tool's effects (and its price) is enough, its
// schema still taken from ADK.
//
// A withheld retry names the call it repeats by ADK's function call id,
// the one the model gave it.
package adkguard
