// Package openaiguard puts preflight in front of the tool calls of an
// agent built on the OpenAI Go SDK (github.com/openai/openai-go/v3,
// tested with v3.98.0). One line guards the tool handlers of an agent
// session stream (client.Beta.Agents.Sessions.Stream):
//
//	ToolHandlers: guard.Handlers(handlers),
//
// and, in a tool loop written by hand, each tool call is answered through
// the guard: a Chat Completions tool call with its tool message by
// [Guard.Call], a Responses API function call with its
// function_call_output item by [Guard.CallResponse].
//
// A [Guard] is one session (agent/tools): one ledger, budget and call
// limit. Use one per conversation or agent session. The session reserves
// the money of calls in flight, so parallel calls never overspend
// together, and identical read-only calls in flight run once.
//
// # Answers
//
// A call that runs is answered with the tool's output, saved for reuse; a
// reused or coalesced call with the saved output; a call that is not run
// with a normal tool output, never an error: a JSON object whose "error"
// member is one sentence for the model ("not run: …; … instead") and
// whose "preflight" member is the decision (verdict, reason codes, the
// call it repeats, issues). Options are adapt.Options: Specs give the
// tools' prices, reuse windows and effects.
//
// # Failures
//
// A handler's Go error is classified ([agent.ClassifyError], which reads
// a StatusCode method) and returned unchanged: the SDK then sends the
// model a generic failed tool result. Guard.Call hands the model "error: "
// and the error's text instead, as the Chat Completions API has no error
// flag. An output that reports its failure in band is classified by its
// text (adapt.DefaultClassify and [adapt.InBand]: a text beginning with
// "error" or "failed" or naming an HTTP error status, or a JSON object
// with an "error" member). Transient or terminal is read from the status;
// a failure without one is transient. A failure is never saved for reuse,
// and a terminal one is not retried.
//
// A call whose context ends while its handler or tool runs (the stream or
// run cancelled, a deadline) is a transient failure whatever it returns,
// counted at its estimate since it was started, never reused nor handed to
// identical calls waiting on it (they decide again).
//
// # Without specs
//
// A function is known to the guard by its name (a handler from the moment
// it is guarded, a Call from its first call); with nil options a call
// that failed terminally is then not retried. The SDK does not say which
// tools are read-only: such tools are side-effecting (never reused or
// coalesced) unless a spec or Options.Defaults.Operation.Effects says
// otherwise.
//
// An agent tool handler is not told its call id, so a withheld retry of a
// handler names the call it repeats by preflight's own step id;
// Guard.Call and Guard.CallResponse, which are given the call, name it
// by the call's id.
package openaiguard
