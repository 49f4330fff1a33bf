// Command preflight checks preflight's signed receipts offline.
//
//	preflight verify --request FILE --response FILE --receipt FILE --keys FILE [--operations FILE] [--prev HASH] [--json]
//	preflight verify --meta FILE --keys FILE [--operations FILE] [--prev HASH] [--json]
//
// verify checks a receipt (package receipt) the way an auditor would,
// with no network and no server: that a key of --keys signed the answer in
// --response, that --request is the request the receipt was signed for, and
// that the library, run again on --request, gives exactly --response. Every
// disagreement is printed on its own line with a JSON Pointer to where it
// is (/receipt/sig, /response/decision, …), what the recomputation gives
// and what was found.
//
//	--request FILE     the body the answer was for: a check request or a tool-call request
//	--response FILE    the answer as received: the 200 body, or the MCP result's structuredContent
//	--receipt FILE     the receipt: the Preflight-Receipt header's value, or the JSON object in
//	                   the MCP result's _meta under "io.agentpreflight/receipt"
//	--meta FILE        instead of the three above, for a call decided by an MCP guard (preflightd
//	                   proxy --signing-key, agent/mcpguard): the tool result, or its _meta, which
//	                   carries the receipt, the request decided and the decision
//	--keys FILE        the signer's public keys: the server's (or proxy's) /.well-known/preflight-receipt-keys
//	                   document, or PEM PUBLIC KEY (or PRIVATE KEY) blocks
//	--operations FILE  the catalog the server decided with (preflightd --operations); default the
//	                   built-in operations. A guard decides a listed tool with the schema and
//	                   annotations of the upstream's tools/list: give them as operations here
//	                   (preflightd proxy serves its run's catalog so, at /.well-known/preflight-catalog)
//	--prev HASH        the hash of the receipt before this one in its chain: a receipt that does
//	                   not name it is a broken link; default: the chain is not checked
//	--json             print the verification as JSON
//
// A file name "-" reads standard input (for one of the files at most). On
// success it prints the receipt's key id and its hash (the --prev of the
// next receipt of the chain) and exits 0. A receipt that does not verify
// exits 1; a file that cannot be read, a receipt that is not one, or a
// request the library cannot evaluate exits 2.
//
// It lives in the core module, beside the library it runs: installing it
// (go install github.com/agentpreflight/preflight/cmd/preflight@latest)
// downloads nothing but the core, so an auditor needs neither the server
// nor its dependencies, and the answer it recomputes comes from the very
// functions the server calls.
package main
