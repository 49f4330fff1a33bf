package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server/internal/rpcid"
	"github.com/agentpreflight/preflight/strictjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServerVersion is the version reported in the MCP initialize result: the
// published interface version.
const mcpServerVersion = "0.3.0"

// newMCPHandler returns the handler for /mcp (GET and POST). It is unpaid and
// stateless.
//
// /mcp is an MCP Streamable HTTP endpoint built on the official Go SDK, in
// stateless mode with plain JSON responses: every POST carries one JSON-RPC
// message and is answered on its own; no Mcp-Session-Id is issued or read, and
// tools/call works with or without a prior initialize. The tools
// check_request and preflight_tool_call pass the client's argument bytes,
// unchanged, to the same decoders and functions as POST /check-request and
// POST /v0.2/preflight/tool-call, so a result's structuredContent and its one
// text block are byte for byte the body the HTTP route returns. Input errors
// are tool results with isError true carrying the error envelope. The handler
// never executes a tool, never fetches anything and keeps no state; it is safe
// for concurrent use.
//
// No answer is larger than MaxMCPResponseBytes. Answers that are not
// JSON-RPC responses use the service's error envelope:
//
//   - any method but POST (GET, DELETE, ...): 405 method_not_allowed, Allow: POST
//   - a body over 65,536 bytes: 413 payload_too_large (read at most one byte
//     past the limit)
//   - a body with a Content-Encoding other than identity: 400
//     unsupported_content_encoding, with Accept-Encoding: identity (not read)
//   - an empty or non-JSON body, judged as strictly as the other routes'
//     bodies (invalid UTF-8, lone surrogate escapes and duplicate member
//     names, such as two ids, are not JSON here) outside params.arguments:
//     400 invalid_json (inside them the tool result reports it)
//   - a JSON object that is not a JSON-RPC message, such as a bare tool body:
//     400 invalid_request
//   - an MCP-Protocol-Version header naming a revision the SDK does not
//     support (any text but the dates of mcp.SupportedProtocolVersions):
//     400 with the JSON-RPC error UnsupportedProtocolVersion (-32022) for
//     the request's id, whose data lists the supported revisions and echoes
//     the requested one
//   - a JSON-RPC batch (a top-level array), whatever MCP-Protocol-Version
//     the client sends: 400 with one JSON-RPC error (code -32600, id null),
//     so one request is never many answers
//   - an id that is neither a string nor an integer within ±(2^53-1)
//     written plainly (the SDK would answer under a rounded id): 400 with
//     a JSON-RPC error (code -32600) for the id as sent, or null
//   - a request of a method the server does not have: 200 with the
//     JSON-RPC error Method not found (-32601) for its id (the SDK refuses
//     it with plain text before 2026-07-28)
//   - params that are not an object, or a member of initialize or
//     tools/call params of the wrong JSON type: 200 with the JSON-RPC
//     error Invalid params (-32602) naming the member's JSON Pointer and
//     the type expected (the SDK names Go types, with code 0 for
//     initialize)
//   - anything else the SDK transport refuses keeps the SDK's status (for
//     example 400 unsupported_media_type when Content-Type is not
//     application/json, 400 invalid_request when Accept does not list both
//     application/json and text/event-stream)
//
// # DNS-rebinding protection and reverse proxies
//
// A web page can make a browser send requests to a name that the attacker
// later resolves to 127.0.0.1 (DNS rebinding), reaching a server that trusts
// being on loopback. To refuse those, a request that arrives on a loopback
// connection must carry a loopback Host header (localhost, 127.0.0.1, [::1],
// with any port); otherwise /mcp answers 403 with code forbidden. A reverse
// proxy on the same machine that forwards Host: api.example.com to
// 127.0.0.1:8080 trips exactly this check, so every MCP call through it fails
// while the other routes work. Two ways out: have the proxy send a loopback
// Host for /mcp (nginx: proxy_set_header Host 127.0.0.1:8080; set
// Config.BaseURL so documents still name the public address), or set
// cfg.MCPTrustProxyHost, which turns the check off. The latter lets a web page
// in a browser on the same machine reach /mcp through a rebound name; here that
// exposes only two free, read-only tools that keep no state, but the check is
// the safer default. Connections that do not arrive on a loopback address are
// never subject to it.
func newMCPHandler(cfg Config, in *instrumentation, g *gate) http.Handler {
	srv := newMCPServer(cfg.Catalog, cfg.Receipts)
	in.attachMCP(srv)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{
			Stateless:                  true,
			JSONResponse:               true,
			MaxRequestBodyBytes:        MaxBodyBytes, // a second guard; the body is already bounded below
			DisableLocalhostProtection: cfg.MCPTrustProxyHost,
		})
	return &mcpHandler{sdk: sdk, gate: g}
}

// mcpHandler puts the service's error rules in front of the SDK transport.
type mcpHandler struct {
	sdk  http.Handler
	gate *gate // nil: no bound on concurrent messages (tests)
}

// ServeHTTP checks the method and the body, then hands the request to the SDK
// with the body already read (at most MaxBodyBytes) and turns the SDK's
// plain-text refusals into error envelopes.
func (h *mcpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		mcpWriteError(w, http.StatusMethodNotAllowed, &preflight.Error{
			Code:    ErrorMethodNotAllowed,
			Message: "/mcp accepts only POST: this MCP endpoint is stateless and opens no server-sent event stream",
		})
		return
	}
	body, members, batch, perr := mcpReadBody(w, r)
	id := members["id"]
	if batch {
		mcpJSONRPCError(w, http.StatusBadRequest, []byte(mcpBatchRefusal))
		return
	}
	if perr != nil {
		mcpWriteError(w, statusOf(perr.Code), perr)
		return
	}
	if refusal := mcpIDRefusal(id); refusal != nil {
		mcpJSONRPCError(w, http.StatusBadRequest, refusal)
		return
	}
	if refusal := mcpParamsRefusal(members); refusal != nil {
		mcpJSONRPCError(w, http.StatusOK, refusal)
		return
	}
	if v := r.Header.Get(mcpVersionHeader); v != "" && !slices.Contains(mcp.SupportedProtocolVersions(), v) {
		mcpJSONRPCError(w, http.StatusBadRequest, mcpUnsupportedVersion(id, v))
		return
	}
	if h.gate != nil {
		release := h.gate.enter(r.Context())
		if release == nil {
			w.Header().Set("Retry-After", strconv.Itoa(gateRetryAfter))
			mcpWriteError(w, http.StatusServiceUnavailable, h.gate.busy())
			return
		}
		defer release()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))

	ew := &mcpEnvelopeWriter{w: w}
	h.sdk.ServeHTTP(ew, r)
	ew.finish(id)
}

// mcpIDRefusal returns the answer to a message whose id the SDK would not
// answer under the same id (see package rpcid): Invalid Request (-32600)
// under the id as sent when it is a number, else null. nil: the id is
// fine (or absent).
func mcpIDRefusal(id json.RawMessage) []byte {
	if rpcid.Safe(id) {
		return nil
	}
	msg, _ := json.Marshal(rpcid.Rule)
	return []byte(`{"jsonrpc":"2.0","id":` + string(rpcid.Echo(id)) + `,"error":{"code":-32600,"message":` + string(msg) + `}}`)
}

// mcpParamsRefusal returns the answer to a request whose params have a
// member of the wrong JSON type for the methods the server has, which
// the SDK would refuse with its Go type names and, for initialize, code
// 0: Invalid params (-32602) under the request's id, naming the member by
// its JSON Pointer and the type expected. It checks only what is present
// (a missing member is the SDK's to judge, as before); nil when nothing is
// wrong, and for a notification.
func mcpParamsRefusal(msg map[string]json.RawMessage) []byte {
	id := msg["id"]
	if len(id) == 0 {
		return nil
	}
	var m struct {
		Method string
		Params json.RawMessage
	}
	json.Unmarshal(msg["method"], &m.Method)
	m.Params = msg["params"]
	if len(m.Params) == 0 || string(m.Params) == "null" {
		return nil
	}
	refuse := func(at, want string, found json.RawMessage) []byte {
		msg, _ := json.Marshal("invalid params: " + at + " must be " + want + ", found " + jsonKind(found))
		return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32602,"message":` + string(msg) + `}}`)
	}
	if jsonKind(m.Params) != "object" {
		return refuse("/params", "an object", m.Params)
	}
	var members map[string]json.RawMessage
	json.Unmarshal(m.Params, &members)
	type want struct{ member, kind, article string }
	var wants []want
	switch m.Method {
	case "initialize":
		wants = []want{{"protocolVersion", "string", "a"}, {"capabilities", "object", "an"}, {"clientInfo", "object", "an"}}
	case "tools/call":
		// Not arguments: the tools answer for those, as the HTTP routes
		// answer for a body (a result carrying the envelope).
		wants = []want{{"name", "string", "a"}}
	}
	// null is absent, as for the SDK.
	for _, w := range wants {
		if v, ok := members[w.member]; ok && jsonKind(v) != w.kind && jsonKind(v) != "null" {
			return refuse("/params/"+w.member, w.article+" "+w.kind, v)
		}
	}
	if info, ok := members["clientInfo"]; ok && m.Method == "initialize" {
		var ci map[string]json.RawMessage
		json.Unmarshal(info, &ci)
		for _, k := range []string{"name", "version"} {
			if v, ok := ci[k]; ok && jsonKind(v) != "string" && jsonKind(v) != "null" {
				return refuse("/params/clientInfo/"+k, "a string", v)
			}
		}
	}
	return nil
}

// jsonKind names the JSON type of the raw value v.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// mcpVersionHeader carries the MCP revision a client speaks after
// initialization.
const mcpVersionHeader = "MCP-Protocol-Version"

// mcpUnsupportedVersion is the answer to a request whose
// MCP-Protocol-Version header names a revision the SDK does not speak: the
// UnsupportedProtocolVersion JSON-RPC error of the 2026-07-28 revision, for
// the request's id (null when it has none), whose data lists the
// supported revisions (those server/discover lists) and echoes the one
// requested. The SDK itself refuses unknown revisions before 2026-07-28
// with plain text and reads any later-sorting text, dated or not (such as
// "2\xef15-01-01"), as its newest revision, so every unsupported value is
// answered here, before the SDK sees it.
func mcpUnsupportedVersion(id json.RawMessage, requested string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: mcp.SupportedProtocolVersions(), Requested: requested})
	msg, _ := json.Marshal("protocol version " + strconv.Quote(strictjson.Clip(requested)) + " is not supported by this server")
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(mcp.CodeUnsupportedProtocolVersion) +
		`,"message":` + string(msg) + `,"data":` + string(data) + `}}`)
}

// mcpReadBody reads the body as every route does (readLimited) and rejects
// what is not a single JSON-RPC message before the SDK sees it. On failure
// it returns the envelope to send; a batch (a top-level array) comes back as
// batch true, to be answered with a JSON-RPC error. members are the
// message's members by their exact names, as the SDK reads them (nil for
// a message that is not an object).
func mcpReadBody(w http.ResponseWriter, r *http.Request) (body []byte, members map[string]json.RawMessage, batch bool, perr *preflight.Error) {
	body, perr = readLimited(w, r)
	if perr != nil {
		return nil, nil, false, perr
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, nil, false, &preflight.Error{Code: preflight.ErrorInvalidJSON, Message: "the request body is empty: expected a JSON-RPC 2.0 message"}
	}
	if perr := strictJSON(body); perr != nil {
		return nil, nil, false, perr
	}
	if trimmed[0] == '[' {
		return nil, nil, true, nil
	}
	if json.Unmarshal(body, &members) == nil {
		if _, ok := members["jsonrpc"]; !ok {
			return nil, nil, false, &preflight.Error{
				Code: preflight.ErrorInvalidRequest,
				Message: "the body is not an MCP message: send JSON-RPC 2.0 messages such as " +
					`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_request","arguments":{...}}}; ` +
					"a bare tool body belongs in params.arguments",
				Details: []preflight.Issue{{Path: "/jsonrpc", Code: preflight.IssueRequired, Message: `expected "2.0", found no jsonrpc member`}},
			}
		}
	}
	return body, members, false, nil
}

// strictJSON checks an MCP body as strictly as the other routes check
// theirs (duplicate member names, invalid UTF-8 and lone surrogate escapes
// are refused, so that "id" names one id and the SDK never sees text it
// would repair), and returns the envelope to send when it is not JSON. A
// problem inside params.arguments is left to the tool, whose result
// reports it as the HTTP routes would; the parser stops at the first
// problem, so one there hides any that follow it.
func strictJSON(body []byte) *preflight.Error {
	_, err := strictjson.Parse(body, strictjson.Limits{})
	var je *strictjson.Error
	if err == nil || !errors.As(err, &je) {
		return nil // the parser only returns *strictjson.Error
	}
	inArguments := strings.HasPrefix(je.Pointer, "/params/arguments/") ||
		je.Pointer == "/params/arguments" && je.Kind != strictjson.ErrDuplicateKey // a second "arguments" is the message's
	if inArguments {
		// The tool answers for its arguments, with a result carrying the
		// envelope. The parser stopped there, so the message's own members
		// after them are checked here for a repeated name.
		if at, dup := repeatedEnvelopeMember(body); dup {
			return &preflight.Error{Code: preflight.ErrorInvalidJSON, Message: "the request body is not valid JSON: duplicate object member name: expected a JSON-RPC 2.0 message",
				Details: []preflight.Issue{{Path: at, Code: preflight.IssueDuplicateKey, Message: "duplicate member name " + strconv.Quote(at[strings.LastIndexByte(at, '/')+1:])}}}
		}
		return nil
	}
	// The code and detail are the library's, as for any request body; the
	// message says what was expected here.
	e := preflight.ParseError(err)
	what := "not valid JSON"
	switch je.Kind {
	case strictjson.ErrDuplicateKey:
		what = "not valid JSON: duplicate object member name"
	case strictjson.ErrInvalidUTF8:
		what = "not valid JSON: invalid UTF-8"
	case strictjson.ErrDepth:
		what = "nested too deeply"
	}
	e.Message = "the request body is " + what + ": expected a JSON-RPC 2.0 message"
	return e
}

// repeatedEnvelopeMember reports the pointer of a member name repeated in
// the message object or in its params object, whatever the arguments
// hold. It is strictJSON's second look when the parser stopped inside the
// arguments.
func repeatedEnvelopeMember(body []byte) (string, bool) {
	at, dup, params := repeatedMember(body, "", "params")
	if dup || params == nil {
		return at, dup
	}
	at, dup, _ = repeatedMember(params, "/params", "")
	return at, dup
}

// repeatedMember reports the pointer (under path) of a member name the
// object text obj repeats, and returns the value of its member named keep.
// Text that is not an object repeats nothing.
func repeatedMember(obj []byte, path, keep string) (at string, dup bool, kept json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false, nil
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		name, ok := t.(string)
		if err != nil || !ok {
			return "", false, nil
		}
		if seen[name] {
			return path + "/" + strictjson.EscapePointerToken(name), true, nil
		}
		seen[name] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false, nil
		}
		if name == keep {
			kept = v
		}
	}
	return "", false, kept
}

// mcpBatchRefusal is the answer to a JSON-RPC batch (a top-level array):
// one JSON-RPC error, Invalid Request, with a null id, whatever
// MCP-Protocol-Version the client sent. Batches were removed from MCP in
// 2025-06-18; refusing them at every version means one small request is
// always one small answer.
const mcpBatchRefusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,` +
	`"message":"JSON-RPC batches are not accepted: send one JSON-RPC message per POST"}}`

// mcpJSONRPCError writes a JSON-RPC error response with the given HTTP
// status. id is the request's raw id, or null.
func mcpJSONRPCError(w http.ResponseWriter, status int, body []byte) {
	w.Header().Del("Content-Length")
	writeJSON(w, status, body)
}

// mcpWriteError writes err as the error envelope with the given status.
func mcpWriteError(w http.ResponseWriter, status int, err *preflight.Error) {
	b, _ := json.Marshal(err) // cannot fail: strings and a slice of Issue
	w.Header().Del("Content-Length")
	writeJSON(w, status, b)
}

// MaxMCPResponseBytes bounds the body of any /mcp response. The largest
// legitimate answer (a check_request result listing 100 errors, carried
// twice: as structuredContent and as its serialized text) stays well below
// it. A response that would be larger is replaced by a JSON-RPC error
// (code -32603) for the same id, so no request can make the server build or
// send an answer out of proportion to what it sent.
const MaxMCPResponseBytes = 1 << 20

// mcpEnvelopeWriter holds the SDK's response and writes it in finish: a
// JSON-RPC response (including a JSON-RPC error such as an unknown tool)
// goes out unchanged when it fits in MaxMCPResponseBytes; a plain-text
// transport error (status >= 400, text/plain) is rewritten as the error
// envelope. The transport runs with JSON responses (no event stream), so
// holding the answer until the SDK returns changes nothing for a client.
type mcpEnvelopeWriter struct {
	w           http.ResponseWriter
	wroteHeader bool
	status      int          // the status the SDK chose
	plain       bool         // a plain-text error held back for rewriting
	body        bytes.Buffer // the held answer, at most MaxMCPResponseBytes (1 KiB for plain text)
	overflow    bool         // the answer outgrew its bound
}

func (e *mcpEnvelopeWriter) Header() http.Header { return e.w.Header() }

func (e *mcpEnvelopeWriter) WriteHeader(code int) {
	if e.wroteHeader {
		return
	}
	e.wroteHeader = true
	e.status = code
	e.plain = code >= 400 && strings.HasPrefix(e.w.Header().Get("Content-Type"), "text/plain")
}

func (e *mcpEnvelopeWriter) Write(p []byte) (int, error) {
	if !e.wroteHeader {
		e.WriteHeader(http.StatusOK)
	}
	limit := MaxMCPResponseBytes
	if e.plain {
		limit = 1024
	}
	room := limit - e.body.Len()
	if len(p) > room {
		e.overflow = !e.plain
		p = p[:max(room, 0)]
	}
	e.body.Write(p)
	return len(p), nil
}

// Flush does nothing: the answer is written whole by finish.
func (e *mcpEnvelopeWriter) Flush() {}

// finish writes the held answer. id is the request's raw JSON-RPC id (nil
// when it had none), used when an oversized answer is replaced.
func (e *mcpEnvelopeWriter) finish(id json.RawMessage) {
	switch {
	case !e.wroteHeader:
		// The SDK wrote nothing: an empty 200.
		return
	case e.plain && len(id) > 0 && strings.HasPrefix(e.body.String(), "JSON RPC not handled"):
		// The SDK (before 2026-07-28) refuses a request of a method it does
		// not have with plain text; JSON-RPC answers it Method not found.
		msg, _ := json.Marshal("method not found: the server has no method " + strings.TrimSpace(strings.TrimSuffix(
			strings.TrimPrefix(e.body.String(), "JSON RPC not handled:"), "unsupported\n")) +
			" (see the MCP methods in the guide at /docs)")
		mcpJSONRPCError(e.w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32601,"message":`+string(msg)+`}}`))
	case e.plain:
		status := e.status
		if status == http.StatusUnsupportedMediaType {
			status = http.StatusBadRequest // as on every other route
		}
		mcpWriteError(e.w, status, &preflight.Error{
			Code:    mcpCodeForStatus(e.status),
			Message: strings.TrimSpace(e.body.String()),
		})
	case e.overflow:
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		msg := `{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32603,"message":"the response would be larger than ` +
			strconv.Itoa(MaxMCPResponseBytes) + ` bytes, the most /mcp sends"}}`
		mcpJSONRPCError(e.w, http.StatusOK, []byte(msg))
	default:
		e.w.Header().Set("Content-Length", strconv.Itoa(e.body.Len()))
		e.w.WriteHeader(e.status)
		e.w.Write(e.body.Bytes())
	}
}

// mcpCodeForStatus names the envelope code of a transport refusal.
func mcpCodeForStatus(status int) preflight.ErrorCode {
	switch {
	case status == http.StatusForbidden:
		return ErrorForbidden
	case status == http.StatusNotFound:
		return ErrorNotFound
	case status == http.StatusMethodNotAllowed:
		return ErrorMethodNotAllowed
	case status == http.StatusRequestEntityTooLarge:
		return ErrorPayloadTooLarge
	case status == http.StatusUnsupportedMediaType:
		return ErrorUnsupportedMediaType
	case status >= 500:
		return ErrorInternalError
	default:
		return preflight.ErrorInvalidRequest
	}
}
