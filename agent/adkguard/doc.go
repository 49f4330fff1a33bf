// Package adkguard puts preflight in front of the tool calls of a Google
// ADK-Go agent (google.golang.org/adk/v2, tested with v2.2.0). One line
// guards every agent of a runner, as a plugin:
//
//	PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard.Plugin()}},
//
// or one agent, as a callback pair of its llmagent.Config:
//
//	BeforeToolCallbacks: []llmagent.BeforeToolCallback{guard.BeforeTool},
//	AfterToolCallbacks:  []llmagent.AfterToolCallback{guard.AfterTool},
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
// in flight run once.
//
// The before hook decides each call by its tool name and arguments,
// through the catalog that Options.Specs describe. A call that may run
// runs, and the after hook records its outcome (classified by
// Options.Classify) and saves its result; a reused or coalesced call is
// answered with the saved result; a call that is not run with a normal
// function response, never a Go error (which ADK would hand to error
// callbacks and plugins): {"error": "not run: …; … instead", "preflight":
// the decision}. ADK runs after hooks on a substituted result too; the
// guard's after hook leaves those alone.
//
// A tool's Go error reaches the after hook before ADK turns it into
// {"error": …} for the model; it is classified by agent.ClassifyError by
// default. A result is a success unless Options.Classify says otherwise.
package adkguard
