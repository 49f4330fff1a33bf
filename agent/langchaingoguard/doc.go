// Package langchaingoguard puts preflight in front of the tool calls of a
// LangChainGo agent (github.com/tmc/langchaingo, tested with v0.1.14).
// One line guards an agent's executor:
//
//	executor := agents.NewExecutor(guard.Agent(agent))
//
// or, for code that calls tools itself, one tool at a time:
//
//	search = guard.Tool(search)
//
// A [Guard] is one session (agent/tools): one ledger, budget and call
// limit. Use one per run, or per conversation whose calls may reuse each
// other's results.
//
// # Calls
//
// A LangChainGo tool takes one string. A call is decided by the tool's
// name and its input as JSON arguments: the input itself when it is a JSON
// object, which is what a function-calling agent (OpenAIFunctionsAgent)
// passes, else {"input": …} with the free text a ReAct agent (MRKL,
// conversational) passes, or {"inputBase64": …} for bytes that are not
// UTF-8; see [Arguments]. A call that runs is answered
// with the tool's output, saved for reuse; a reused call with the saved
// output, byte for byte; a call that is not run with a normal observation,
// never a Go error: a JSON object whose "error" member is one sentence for
// the model ("not run: …; … instead") and whose "preflight" member is the
// decision (verdict, reason codes, the call it repeats, issues). Options
// are adapt.Options, flat: Specs give the tools' prices, reuse windows and
// effects.
//
// # Failures
//
// LangChainGo's executor ends the run on a tool's Go error. Its own tools
// report failures in their output instead (the calculator answers "error
// from evaluator: …"), and so does the agent [Guard.Agent] returns: a
// tool's error becomes the observation "error: " and its text, after the
// guard classified the error itself ([agent.ClassifyError], which reads a
// StatusCode method). By default (adapt.DefaultClassify) an output is a
// failure when it carries one in band ([adapt.InBand]): a text beginning
// with "error" or "failed" or naming an HTTP error status ("HTTP 503",
// "422 Unprocessable Entity"), or a JSON object with an "error" member.
// Transient or terminal is read from the status; a failure without one
// is transient, which never blocks a retry. A failure is never saved for
// reuse, and a terminal one is not retried. A tool whose successes look
// like failures, or whose failures do not, needs a Classify.
//
// A call whose context ends while its tool runs (the run cancelled, a
// deadline) is a transient failure whatever the tool returns, counted at
// its estimate since the tool was started, and never reused; the executor
// then ends the run with the context's error. A later identical call runs
// again.
//
// # Without specs
//
// A tool no spec names is known by its name from the moment it is
// guarded (LangChainGo tools have no input schema). LangChainGo does not
// say which tools are read-only, so such tools are side-effecting (never
// reused) unless Options.Defaults.Operation.Effects or a spec says
// otherwise; with nil options a call that failed terminally is still not
// retried.
//
// The executor runs the calls of a plan one after the other, so nothing
// is coalesced. Through [Guard.Agent], a withheld retry names the call it
// repeats by the model's tool call id (AgentAction.ToolID).
package langchaingoguard
