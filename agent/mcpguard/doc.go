// Package mcpguard puts preflight in front of the tool calls of an MCP
// session, as middleware of the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/mcp). One line guards the calls a
// client makes:
//
//	client.AddSendingMiddleware(mcpguard.Client(nil))
//
// and one line the calls a server receives:
//
//	server.AddReceivingMiddleware(mcpguard.Server(nil))
//
// Each MCP session gets its own [tools.Session]: a ledger, a budget and a
// call limit of its own. The catalog is built from the session's tools/list
// (each tool's inputSchema and annotations) merged with Options.Specs,
// which win. A tool's inputSchema is used as its payload schema in the
// full vocabulary of JSON Schema 2020-12, or of draft-07 (as the
// TypeScript SDK writes), 2019-09 or draft-06 when its $schema names it.
// A schema that cannot be used (a $ref to another document, which is
// never fetched; another $schema; an ill-formed keyword) leaves the tool
// taking any object, and Options.Logger gets a warning naming the tool
// and the reason: give the tool an Options.Specs entry with a usable
// schema to have its arguments checked. Options.AssertFormat makes
// "format" an assertion in listed schemas. A tool's outputSchema, when
// listed, is checked against the structuredContent of each of its results
// (isError false): a mismatch is a warning (logged, and in
// CallReport.OutputIssues), never a block, and the result is passed on
// unchanged; Options.NoOutputCheck turns this off. The
// annotations are the tool author's claims and are not verified: by
// default only a tool annotated readOnlyHint is ever reused or coalesced,
// and one that is not read-only and not marked destructiveHint false is
// never retried after a terminal failure.
//
// For code that sees MCP messages as JSON, such as a proxy, [Session]
// reads tools/call params with [ReadCallParams], exactly as MCP servers
// read them, and refuses params that two readers could take for different
// calls (a member twice, members differing only in case such as "name"
// and "Name", invalid UTF-8) with a JSON-RPC invalid-params error: such a
// call is never forwarded, since the server might run another tool or
// other arguments than the ones judged.
//
// A [Session] also answers each call once however often it arrives
// (see [Session.CallTool]): the retry of a multi-round trip (an
// "input_required" result of the 2026-07-28 revision, retried with its
// requestState) continues the first call, decided and charged once; a
// repeat of a call within its tool's idempotency window (five minutes by
// default) joins the first while it runs and, for a tool that is not
// read-only, gets its result after it succeeded, or a withheld result when
// its outcome is unknown ([ErrOutcomeUnknown]).
//
// A tool whose spec has an Approval (a tool-spec file's "approval":
// "always", "destructive" or {"aboveUsd": …}) runs only after a person
// approved the exact call: a [Session] answers it with an input_required
// result carrying an elicitation and a requestState it seals and checks
// (see [Approvals]), or, for a client of an earlier protocol generation,
// asks through [WithElicit]. Nothing is reserved while a call waits.
//
// Any other call that is not run is answered with a normal tool result,
// never a Go or JSON-RPC error: isError true, one text block for the model ("not run:
// …; … instead"), and the decision (verdict, reason codes, matched call)
// in _meta under [MetaKey] and, unless the tool declares an outputSchema
// (clients check structuredContent against it even on isError), in
// structuredContent under "preflight". A reused or coalesced call is answered with the saved result,
// unchanged.
//
// Outcomes are classified by [Classify]: a result with isError true is a
// failure, transient when its text speaks of a timeout, a rate limit, a
// 429 or a 5xx status, or temporary unavailability, terminal otherwise; a
// JSON-RPC invalid-params error (schema) is terminal; a call abandoned
// after it may have reached the server (its caller cancelled it, or a
// deadline passed) is transient for a read-only tool and terminal for any
// other, since the tool may have done its work: the retry cap then bounds
// how often it is sent again. Other errors are classified by
// [agent.ClassifyError].
package mcpguard
