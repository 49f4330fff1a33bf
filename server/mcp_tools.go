package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tool schemas, served by tools/list exactly as written (key order kept).
// The output schemas accept the result object and the error envelope, because
// clients validate structuredContent of isError results too.
var (
	//go:embed mcp_check_input.json
	mcpCheckInputSchema []byte
	//go:embed mcp_check_output.json
	mcpCheckOutputSchema []byte
	//go:embed mcp_toolcall_input.json
	mcpToolCallInputSchema []byte
	//go:embed mcp_toolcall_output.json
	mcpToolCallOutputSchema []byte
)

// The tool names, as the spec fixes them.
const (
	mcpToolCheckRequest = "check_request"
	mcpToolToolCall     = "preflight_tool_call"
)

// mcpServerInstructions is sent in the initialize result; clients may show it
// to the model.
const mcpServerInstructions = "preflight checks a tool call before you spend money or quota on it. " +
	"It never sends your request, never executes a tool and never fetches a URL; it only looks at the JSON you give it. " +
	"Call check_request before sending an HTTP request whose body must match a JSON Schema. " +
	"Call preflight_tool_call before a paid web search or page fetch to learn whether to make it, reuse a saved result, or wait. " +
	"Both tools are free and deterministic."

const mcpCheckDescription = "Validate the JSON body of an HTTP request you are about to send, against the JSON Schema the target API expects, " +
	"before you send it. Use it when a failed attempt would cost money, quota or a retry turn.\n\n" +
	"It never sends the request and never fetches the URL. Only request.body is validated; the schema may use only " +
	"type, required, properties, items, enum, const, minimum, maximum, minLength, maxLength, pattern and additionalProperties. " +
	"A pattern is ECMA-262 (JavaScript, u flag) and unanchored, as in JavaScript's new RegExp(pattern, \"u\"); RE2/PCRE-only syntax " +
	"((?i), \\A, \\z, [[:alpha:]]) and lookaround or back-references (not regular) are refused with unsupported_pattern.\n\n" +
	"Result: valid true means the body satisfies the schema. valid false means it does not: errors lists every failure " +
	"with a JSON Pointer path (for example /request/body/items/0/sku), a code naming the failing keyword and a message; " +
	"fix the body and check again instead of sending it. warnings never make the body invalid (sensitive_header means you " +
	"sent a credential header here: do not). requestHash identifies the normalized request plus schema. With economics, " +
	"economics.decision is proceed (send it) or abort (sending would be wasted).\n\n" +
	"isError true means the arguments themselves could not be evaluated (malformed, an unsupported schema keyword, a limit): " +
	"the result is {\"error\":{\"code\",\"message\",\"details\"}} with JSON Pointers into your arguments."

// mcpToolCallLead opens the preflight_tool_call description with the
// built-in operations; a configured catalog replaces it with its own (see
// toolCallDescription).
const mcpToolCallLead = "Decide whether a proposed web search or page fetch is worth making, before you make it and spend money on it. " +
	"Send the call (tool.provider search or browse, tool.operation web_search or fetch, tool.request the exact payload), "

const mcpToolCallDescription = mcpToolCallLead + mcpToolCallBody

const mcpToolCallBody = "your remaining budget, and optionally your history of earlier calls and what you can do instead.\n\n" +
	"It never executes the tool, never searches and never fetches anything; history, budget and goal are your own assertions.\n\n" +
	"decision: allow (enforcement execute): no rule found waste, make the call. block (safe_to_skip): the payload is invalid " +
	"(see issues) or the same call already failed terminally retryCap times; do not make it. reuse (safe_to_skip): use your " +
	"saved result recommendation.resultReference instead of calling. defer (safe_to_skip): the budget or call limit cannot " +
	"afford it now. advise (advisory): optional advice such as recommendation.action reduce_scope, or UNSUPPORTED_OPERATION " +
	"for providers this service does not model. reasonCodes starts with the deciding rule. After your real call completes, " +
	"record requestFingerprint with the outcome in your history for the next decision. Dollar figures in estimated are modeled, not receipts.\n\n" +
	"isError true means the arguments could not be evaluated (missing or ill-typed fields, a limit): the result is " +
	"{\"error\":{\"code\",\"message\",\"details\"}} with JSON Pointers into your arguments."

// newMCPServer returns the MCP server with both tools. It keeps no state
// between calls and is safe for concurrent use by many sessions.
//
// catalog is the set of operations preflight_tool_call decides; nil means
// the built-in ones, and the tool descriptions are then exactly as written.
//
// signer, when not nil, signs every result that is not an error (see
// Config.Receipts).
func newMCPServer(catalog *preflight.Catalog, signer *receipt.Signer) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "preflight", Title: "preflight", Version: mcpServerVersion},
		&mcp.ServerOptions{
			Instructions: mcpServerInstructions,
			// Tools, and prompts declared with none to list: the SDK answers
			// prompts/list whatever is declared (an empty list), and the
			// 2026-07-28 revision requires a server that answers it to
			// declare prompts in server/discover. No logging capability,
			// and neither list ever changes.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Prompts: &mcp.PromptCapabilities{}},
		})
	falseHint := false
	s.AddTool(&mcp.Tool{
		Name:         mcpToolCheckRequest,
		Title:        "Check an HTTP request body against its JSON Schema",
		Description:  mcpCheckDescription,
		InputSchema:  json.RawMessage(mcpCheckInputSchema),
		OutputSchema: json.RawMessage(mcpCheckOutputSchema),
		Annotations: &mcp.ToolAnnotations{
			Title: "Check an HTTP request body", ReadOnlyHint: true, IdempotentHint: true,
			DestructiveHint: &falseHint, OpenWorldHint: &falseHint,
		},
	}, mcpJSONToolHandler(preflight.CheckJSON, signer))
	s.AddTool(&mcp.Tool{
		Name:         mcpToolToolCall,
		Title:        toolCallTitle(catalog),
		Description:  toolCallDescription(catalog),
		InputSchema:  toolCallInputSchema(catalog),
		OutputSchema: json.RawMessage(mcpToolCallOutputSchema),
		Annotations: &mcp.ToolAnnotations{
			Title: "Preflight a tool call", ReadOnlyHint: true, IdempotentHint: true,
			DestructiveHint: &falseHint, OpenWorldHint: &falseHint,
		},
	}, mcpJSONToolHandler(catalog.DecideJSON, signer))
	s.AddReceivingMiddleware(mcpUnknownToolMiddleware)
	return s
}

// mcpJSONToolHandler runs a tool whose client's argument bytes go,
// unchanged, to run, the function the tool's HTTP route calls:
// preflight.CheckJSON for check_request (POST /check-request), the
// catalog's DecideJSON for preflight_tool_call (POST
// /v0.2/preflight/tool-call; the tool is free: no paywall applies).
func mcpJSONToolHandler[T any](run func([]byte) (T, error), signer *receipt.Signer) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := mcpArguments(req)
		if err != nil {
			return mcpErrorResult(err)
		}
		prev, err := mcpReceiptPrev(req)
		if err != nil {
			return mcpErrorResult(err)
		}
		out, err := run(args)
		if err != nil {
			return mcpErrorResult(err)
		}
		return mcpAnswer(out, signer, prev)
	}
}

// mcpReceiptPrev reads params._meta "io.agentpreflight/receipt-prev": the
// hash of the previous receipt of the caller's run, "" when absent. Any
// other value than one lower-case hex SHA-256 is an input error.
func mcpReceiptPrev(req *mcp.CallToolRequest) (string, error) {
	if req.Params == nil {
		return "", nil
	}
	v, ok := req.Params.Meta[receipt.PrevMetaKey]
	if !ok {
		return "", nil
	}
	if s, ok := v.(string); ok && receipt.IsHash(s) {
		return s, nil
	}
	return "", &preflight.Error{
		Code:    preflight.ErrorInvalidRequest,
		Message: "params._meta[\"" + receipt.PrevMetaKey + "\"] must be the hash of the previous receipt: a string of 64 lower-case hex digits",
	}
}

// mcpAnswer is mcpResult for an answer, with its receipt in _meta when
// signer is not nil. The receipt signs the very bytes of structuredContent.
func mcpAnswer(v any, signer *receipt.Signer, prev string) (*mcp.CallToolResult, error) {
	res, err := mcpResult(v, false)
	if err != nil || signer == nil {
		return res, err
	}
	rc, err := signer.Sign(res.StructuredContent.(json.RawMessage), prev)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "could not sign the result: " + err.Error()}
	}
	res.Meta = mcp.Meta{receipt.MetaKey: json.RawMessage(rc.Marshal())}
	return res, nil
}

// mcpArguments returns the exact bytes the client sent as params.arguments.
// Absent arguments are an input error; anything present (null, an array, a
// string) goes to the library decoder, which answers exactly as the HTTP
// route does for the same body.
func mcpArguments(req *mcp.CallToolRequest) ([]byte, error) {
	if req.Params == nil || len(req.Params.Arguments) == 0 {
		return nil, &preflight.Error{
			Code:    preflight.ErrorInvalidRequest,
			Message: "tools/call has no arguments: params.arguments must be the request object",
			Details: []preflight.Issue{{Path: "", Code: preflight.IssueRequired, Message: "expected a JSON object, found nothing"}},
		}
	}
	return req.Params.Arguments, nil
}

// mcpResult marshals v once and uses the same bytes for structuredContent and
// the single text block, so both carry exactly what the HTTP route returns.
func mcpResult(v any, isError bool) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "could not encode the result: " + err.Error()}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
		IsError:           isError,
	}, nil
}

// mcpErrorResult turns a *preflight.Error into an isError result carrying the
// error envelope. Any other error is a bug in the library contract and
// becomes a JSON-RPC internal error, never a result.
func mcpErrorResult(err error) (*mcp.CallToolResult, error) {
	var perr *preflight.Error
	if errors.As(err, &perr) {
		return mcpResult(perr, true)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}
