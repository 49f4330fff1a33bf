// Package mcpgoguard puts preflight in front of the tool calls of
// mark3labs mcp-go (github.com/mark3labs/mcp-go, tested with v1.2.1), the
// library many Go MCP servers are built on. One line guards the calls a
// server receives, as tool-handler middleware:
//
//	srv.Use(guard.Middleware())
//
// and one line the calls a client makes:
//
//	c := guard.Client(mcpClient)
//
// It does for mcp-go what agent/mcpguard does for the official go-sdk,
// with the options of every adapter (adapt.Options).
//
// # Sessions and catalog
//
// Each MCP session a server middleware sees (by its session id), and
// each client Guard.Client wraps, gets a session (agent/tools) of its own:
// ledger, budget, call limit and saved results; one client's result is
// never another's. A tool is known by its inputSchema (when it compiles
// in preflight's subset; else the tool takes any object) and its MCP
// annotations, read from the server that received the call (Middleware)
// or from the tools the
// client lists (Client), merged with Options.Specs, which win. The
// annotations are the tool author's claims: only a tool annotated
// readOnlyHint is ever reused or coalesced, and one that is not
// read-only and not marked destructiveHint false is never retried after a
// terminal failure. mcp.NewTool annotates every tool as not read-only and
// destructive unless told otherwise; a tool with no hints at all (or known
// by its name alone) takes Options.Defaults.Operation.Effects, zero
// meaning side-effecting.
//
// # Answers
//
// A call that runs is answered with the handler's result; a reused or
// coalesced call with the saved result; a call that is not run with a
// normal tool result, never a Go or JSON-RPC error: isError true, one text
// block for the model ("not run: …; … instead"), the decision in _meta
// under [MetaKey] and, unless the tool declares an outputSchema, the
// withheld-call result ({"error": …, "preflight": …}) as
// structuredContent.
//
// # Failures
//
// A call's outcome is classified by Options.Classify, by default
// [Classify]: a result with isError true (what the mcp-go idioms
// mcp.NewToolResultError and NewToolResultErrorFromErr return) is a
// failure, transient or terminal by the status or words its text carries;
// a handler's Go error (which mcp-go sends as a JSON-RPC error) is
// classified by the error, or by the status its text names on the client
// side. A failure is never saved for reuse.
//
// A call whose context ends while its handler runs (the client cancelled
// it, a deadline passed) is a transient failure whatever the handler
// returns, counted at its estimate since the handler was started, never
// reused nor handed to identical calls waiting on it (they decide again).
//
// A result that asks the client for more input (the multi-round trip of
// the 2026-07-28 revision) is neither a failure nor a charge: the retry
// that carries the input is decided and charged as the call, once.
//
// # Approvals
//
// On the server (Middleware), a call whose tool needs a person's approval
// by its spec (tools.Spec.Approval: "always", "destructive", or above a
// cost) is asked with mcp-go's own elicitation (MCPServer.RequestElicitation,
// an elicitation/create request) before anything runs or is reserved: its
// message and _meta under [ApprovalMetaKey] show the exact call (tool,
// arguments, estimated cost, reason, requestFingerprint), and its form
// asks {"approve": boolean}. The call waits for the answer, nothing
// reserved; accepted with approve true it is decided as any call (the
// budget still holds) and runs once; anything else runs nothing and spends
// nothing. A session that cannot be sent the request (no elicitation
// capability; a 2026-07-28 session over a transport, which a server may
// not send requests: agent/mcpguard answers those with input_required)
// does not run the call. The client wrapper (Guard.Client) cannot ask: it
// does not run such a call.
package mcpgoguard
