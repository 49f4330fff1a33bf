// Package server is the reference HTTP server around package preflight.
//
// [New] returns an [net/http.Handler] that serves every route of the
// service: POST /check-request, POST /v0.2/preflight/tool-call (paid with
// x402 when a payment recipient is configured), the reserved
// POST /v0.2/usage/dump (always 503), GET /health, GET /openapi.json, the MCP
// transport at /mcp, and the informational documents (/docs, /llms.txt,
// well-known discovery files).
//
// The handler is an adapter: it reads at most 65,536 bytes of a request body,
// hands the bytes to the library ([preflight.CheckJSON],
// [preflight.Catalog.DecideJSON]), and writes the result with [encoding/json.Marshal], or
// maps a [*preflight.Error] to an HTTP status and the error envelope. It never
// re-validates input on its own, so HTTP, MCP and in-process callers always
// get the same answers.
//
// # What it never does
//
// The handler never sends the proposed request, never fetches a URL it is
// given, never executes a tool and keeps no state between requests. The same
// request always gets the same response bytes. It writes no access logs;
// wrap it (as cmd/preflightd does) to log requests.
//
// The handler is safe for concurrent use.
package server
