// Package anthropicguard puts preflight in front of the tool calls of a
// Claude agent built on the Anthropic Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2, tested with v2.15.0). One
// line guards the SDK's tool runner (BetaToolRunner and
// BetaToolRunnerStreaming, which run a turn's tools in parallel):
//
//	runner := client.Beta.Messages.NewToolRunner(guard.Tools(tools...), params, guard.Observe())
//
// (Observe only tells the guard the tool_use ids of the runner's calls,
// for the messages the model reads; see below.)
// and, in a tool-use loop written by hand against the Messages API, each
// tool_use block is answered with its tool_result by [Guard.Call].
//
// A [Guard] is one session (agent/tools): one ledger, budget and call
// limit. Use one per conversation. The session reserves the money of
// calls in flight, so a turn's parallel calls never overspend together,
// and identical read-only calls in flight run once.
//
// # Answers
//
// A call that runs is answered with the tool's result, saved for reuse;
// a reused or coalesced call with the saved result; a call that is not
// run with a normal tool result, never an error: one text block holding a
// JSON object whose "error" member is one sentence for the model ("not
// run: …; … instead") and whose "preflight" member is the decision
// (verdict, reason codes, the call it repeats, issues). Options are
// adapt.Options: Specs give the tools' prices, reuse windows and effects.
//
// # Failures
//
// The runner hands a tool's Go error to the model as an is_error result
// ("Error: …") and carries on; the guard has classified the error first
// ([agent.ClassifyError], which reads a StatusCode method). A tool that
// reports its failure in its result instead is classified by the text of
// its text blocks (adapt.DefaultClassify and [adapt.InBand]: a text
// beginning with "error" or "failed" or naming an HTTP error status, or a
// JSON object with an "error" member). Transient or terminal is read from
// the status; a failure without one is transient. A failure is never
// saved for reuse, and a terminal one is not retried.
//
// A call whose context ends while its tool runs (the run cancelled, a
// deadline) is a transient failure whatever the tool returns, counted at
// its estimate since the tool was started, never reused nor handed to
// identical calls of the turn waiting on it (they decide again).
//
// # Without specs
//
// A runner tool is known to the guard by its name and input schema from
// the moment it is guarded, so with nil options a call that breaks the
// schema is not run and one that failed terminally is not retried. The
// SDK does not say which tools are read-only: such tools are
// side-effecting (never reused or coalesced) unless a spec or
// Options.Defaults.Operation.Effects says otherwise.
//
// The runner does not tell a tool the tool_use id of its call. With
// [Guard.Observe] among the runner's options the guard reads the ids from
// the responses (JSON, or the streamed events of BetaToolRunnerStreaming),
// and a withheld retry names the call it repeats by the model's tool_use
// id; without it by preflight's own step id. Guard.Call,
// which is given the block, names it by the tool_use id.
package anthropicguard
