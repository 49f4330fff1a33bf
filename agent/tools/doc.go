// Package tools guards tool calls named by a tool name and raw JSON
// arguments, the way model SDKs and agent frameworks hand them over, on
// top of an agent.Guard: a [Set] of tool [Spec]s turns each call into a
// proposal (catalog entry, price, TTL, retry cap), a [Session] decides it
// and either runs it, answers it with a saved result (reuse), with the
// result of an identical call in flight (coalescing), or withholds it
// with a sentence the model reads ([Answer]). A [ResultStore] keeps the
// tools' results so that reuse hands back the saved bytes: a
// [MemoryResultStore] for one session, a [SharedResultStore] for many,
// each under a quota of its own ([ResultView]). [DecodeSpecs] reads a
// tool-spec file.
//
// Session.Call runs a call in one step; Session.Start and Running.Finish
// split it for runtimes with before and after hooks (they wrap
// agent.Guard.Begin and agent.Permit.End). Package agent/adapt builds the
// framework adapters on this package; agent/mcpguard builds MCP
// middleware on it.
//
// It uses only the public API of package agent. It never runs a tool
// except through the function it is given, never retries, never talks to
// a network and keeps no package-level state. Results are opaque bytes:
// a store returns exactly what it was given.
package tools
