package mcpproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/agentpreflight/preflight/server/internal/reqid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The operator's view of tool calls. Every tools/call the proxy answers,
// through either protocol generation, is announced to Options.OnCall when
// it arrives and reported to the function OnCall returned once it is
// answered: one CallRecord per call, whatever answered it (the upstream,
// the guard, or a bound of the proxy's). Metrics, log lines and spans are
// built from it outside this package.

// CallStart is what is known of a tools/call when it arrives.
type CallStart struct {
	// RequestID is the id of the HTTP request that carried the call (its
	// X-Request-Id when sane, else one the proxy made).
	RequestID string
	// Principal is the caller (see server/internal/identity).
	Principal string
	// Run names the call's run as logs do: "default", or a digest of the
	// run handle or session (see scopeAttrs). Empty when the call was
	// refused before its run was known.
	Run string
	// Tool is the tool name as the client sent it ("" when unreadable);
	// it is the client's, so not a bounded set.
	Tool string
	// Stateless is true for a request of the 2026-07-28 revision.
	Stateless bool
	// Trace is the W3C trace context the client sent with the call
	// (traceparent and tracestate): from params._meta, as MCP carries it,
	// else from the HTTP request's headers. Nil when there is none.
	Trace map[string]string
}

// How a call was answered, CallRecord.Answer.
const (
	AnswerRan          = "ran"           // forwarded upstream
	AnswerNotRun       = "not_run"       // forwarded, and refused by the upstream before it ran (nothing charged)
	AnswerReused       = "reused"        // a saved result of an identical call
	AnswerCoalesced    = "coalesced"     // joined an identical call in flight
	AnswerWithheld     = "withheld"      // not run: the guard's decision
	AnswerRepeat       = "repeat"        // answered by the exactly-once memory
	AnswerNotEvaluated = "not_evaluated" // arguments that could not be evaluated
	AnswerRefused      = "refused"       // a bound of the proxy's, or a policy, refused it
	AnswerApproval     = "approval"      // not run (yet): a person's approval was asked, or was not given (see CallRecord.Approval)
	AnswerError        = "error"         // no answer but an error (cancelled, timeout, guard failure)
)

// What the upstream did with a forwarded call, CallRecord.Upstream.
const (
	UpstreamOK        = "ok"         // a result
	UpstreamToolError = "tool_error" // a result with isError
	UpstreamRPCError  = "rpc_error"  // a JSON-RPC error
	UpstreamFailed    = "failed"     // no answer: unreachable, timeout, cancelled, too large, denied
)

// CallRecord is what happened to one tools/call.
type CallRecord struct {
	CallStart
	// Answer says how the call was answered (Answer… constants).
	Answer string
	// Verdict is preflight's decision (allow, block, …), "" when the call
	// was not decided.
	Verdict string
	// ReasonCodes are the decision's reason codes.
	ReasonCodes []string
	// ReservedUSD is what the call held while it ran and SettledUSD what
	// it was settled with; empty when it did not run.
	ReservedUSD, SettledUSD string
	// Upstream is what the upstream did (Upstream… constants), "" when the
	// call was not forwarded.
	Upstream string
	// UpstreamHTTPStatus is the HTTP status of the upstream's answer to a
	// stateless call, 0 when there was none (or for a session's call).
	UpstreamHTTPStatus int
	// UpstreamDuration is how long the upstream took; Duration how long the
	// whole call took.
	UpstreamDuration, Duration time.Duration
	// Error is the JSON-RPC error the client got, "" for a result.
	Error string
	// SchemaUnchecked, when not empty, says why the tool's listed
	// inputSchema could not be used: the call's arguments were taken as
	// any object (see mcpguard.CallReport.SchemaUnchecked).
	SchemaUnchecked string
	// OutputIssues are where the result's structuredContent did not match
	// the tool's outputSchema, each "path: message"; a warning, the result
	// was passed on (see mcpguard.CallReport.OutputIssues).
	OutputIssues []string
	// Approval, for a call of a tool that needs a person's approval, is
	// what became of it (see mcpguard.CallReport.Approval): "asked",
	// "approved", "declined", "invalid", "expired", "used" or
	// "unavailable"; "" for other calls.
	Approval string
}

// observed is one call being observed.
type observed struct {
	rec    CallRecord
	start  time.Time
	end    func(CallRecord)
	report mcpguard.CallReport
}

// observe announces a call to Options.OnCall. It returns the call's
// context (with the guard's report attached) and the observation, whose
// finish must be called once; both work without OnCall.
func (p *Proxy) observe(ctx context.Context, c CallStart) (context.Context, *observed) {
	o := &observed{rec: CallRecord{CallStart: c}, start: time.Now()}
	if p.opts.OnCall != nil {
		ctx, o.end = p.opts.OnCall(ctx, c)
	}
	return mcpguard.WithCallReport(ctx, &o.report), o
}

// upstream notes what the upstream did with the call: its answer (nil
// when none came), its HTTP status (0 when unknown) and since when it was
// waited for.
func (o *observed) upstream(res *jsonrpc.Response, status int, since time.Time) {
	o.rec.UpstreamDuration += time.Since(since)
	o.rec.UpstreamHTTPStatus = status
	switch {
	case res == nil:
		o.rec.Upstream = UpstreamFailed
	case res.Error != nil:
		o.rec.Upstream = UpstreamRPCError
	default:
		o.rec.Upstream = UpstreamOK
		if resultIsError(res.Result) {
			o.rec.Upstream = UpstreamToolError
		}
	}
}

// resultIsError reports whether result's isError is true, as
// encoding/json reads it into a bool field named isError: the member
// matched whatever its case, the last one of a boolean value counting,
// false when result is not valid JSON. A result of the plain shape
// (valid UTF-8, names of members at the top without escapes or other
// than ASCII letters' case variants of isError, at most one such member,
// true, false or null) is scanned without decoding; anything else is
// decoded (FuzzResultIsError checks that both agree).
func resultIsError(result []byte) bool {
	if v, ok := scanIsError(result); ok {
		return v
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	json.Unmarshal(result, &r)
	return r.IsError
}

// scanIsError reads the top-level isError of result when it is of the
// plain shape resultIsError describes; ok false means "not judged here".
func scanIsError(result []byte) (isError, ok bool) {
	seen := false
	ok = plainMembers(result, func(r *wireReader, name []byte) bool {
		if len(name) != len("isError") || !bytes.EqualFold(name, []byte("isError")) {
			return r.value(1)
		}
		if seen {
			return false
		}
		seen = true
		switch {
		case r.literal("true"):
			isError = true
			return true
		case r.literal("false"), r.literal("null"):
			return true
		}
		return false
	})
	return isError && ok, ok
}

// plainMembers walks data when it is one JSON object (and nothing but
// space around it) whose members' names are plainName: for each member,
// member reads its value from r, positioned at it, and reports whether it
// could. It reports false as soon as data is of another shape or member
// reports false: "not judged here".
func plainMembers(data []byte, member func(r *wireReader, name []byte) bool) bool {
	r := wireReader{data: data}
	r.space()
	if !r.byte('{') {
		return false
	}
	r.space()
	if !r.byte('}') {
		for {
			start := r.i
			if !r.str() {
				return false
			}
			name := data[start+1 : r.i-1]
			r.space()
			if !r.byte(':') {
				return false
			}
			r.space()
			if !plainName(name) || !member(&r, name) {
				return false
			}
			r.space()
			if r.byte(',') {
				r.space()
				continue
			}
			if !r.byte('}') {
				return false
			}
			break
		}
	}
	r.space()
	return r.i == len(data)
}

// plainName reports whether a member name, as written between its
// quotes, is printable ASCII without escapes: a name encoding/json
// matches to a field by ASCII case folding alone.
func plainName(name []byte) bool {
	for _, c := range name {
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// finish reports the call, answered with err (nil for a result).
func (o *observed) finish(err error) {
	if o.end == nil {
		return
	}
	r := &o.rec
	r.Duration = time.Since(o.start)
	if err != nil {
		r.Error = err.Error()
		if e, ok := err.(*jsonrpc.Error); ok {
			r.Error = e.Message
		}
	}
	rep := o.report
	if rep.Report.Decision != nil {
		r.Verdict = string(rep.Report.Decision.Verdict)
		for _, c := range rep.Report.Decision.ReasonCodes {
			r.ReasonCodes = append(r.ReasonCodes, string(c))
		}
	}
	r.ReservedUSD, r.SettledUSD = string(rep.Report.ReservedUSD), string(rep.Report.SettledUSD)
	r.SchemaUnchecked = rep.SchemaUnchecked
	r.Approval = rep.Approval
	for _, is := range rep.OutputIssues {
		r.OutputIssues = append(r.OutputIssues, is.Path+": "+is.Message)
	}
	if r.Answer == "" {
		switch {
		case rep.Repeat:
			r.Answer = AnswerRepeat
		case rep.NotEvaluated:
			r.Answer = AnswerNotEvaluated
		case rep.Approval != "" && rep.Approval != "approved" && r.Upstream == "":
			r.Answer = AnswerApproval
		case rep.NotRun:
			r.Answer = AnswerNotRun
		case r.Upstream != "":
			r.Answer = AnswerRan
		case rep.Decided && rep.How == tools.HowReused:
			r.Answer = AnswerReused
		case rep.Decided && rep.How == tools.HowCoalesced:
			r.Answer = AnswerCoalesced
		case rep.Decided && rep.How == tools.HowWithheld:
			r.Answer = AnswerWithheld
		default:
			r.Answer = AnswerError
		}
	}
	o.end(*r)
}

// refused reports a call refused before the guard saw it.
func (o *observed) refused(e *jsonrpc.Error) {
	o.rec.Answer = AnswerRefused
	o.finish(e)
}

// requestIDOf returns the request id the proxy gave the HTTP request of h.
func requestIDOf(h http.Header) string {
	if h == nil {
		return ""
	}
	return h.Get(reqid.Header)
}

// toolOf returns the tool name of tools/call params, "" when unreadable.
func toolOf(params json.RawMessage) string {
	var p struct {
		Name string `json:"name"`
	}
	json.Unmarshal(params, &p)
	return p.Name
}

// callHead is what the proxy reads of tools/call params besides the
// guard: the tool's name and _meta, as encoding/json reads them, once per
// call.
type callHead struct {
	Name string                     `json:"name"`
	Meta map[string]json.RawMessage `json:"_meta"`
}

// readHead reads params' name and _meta. A type error in one member
// leaves the other read, as when each is read alone.
//
// Params of the plain shape (see scanHead) are scanned, not decoded.
func readHead(params json.RawMessage) callHead {
	if name, ok := scanHead(params); ok {
		return callHead{Name: name}
	}
	var p callHead
	json.Unmarshal(params, &p)
	return p
}

// scanHead reads the name of params of the plain shape: valid UTF-8 JSON,
// one object whose members' names are written without escapes in
// printable ASCII, with no _meta, nor any case variant of it or of name,
// and at most one name, a string without escapes (or null); ok false
// means "not judged here". What it reads encoding/json reads the same
// way (FuzzReadHead).
func scanHead(params []byte) (name string, ok bool) {
	seen := false
	ok = plainMembers(params, func(r *wireReader, key []byte) bool {
		switch {
		case len(key) == len("_meta") && bytes.EqualFold(key, []byte("_meta")):
			return false
		case len(key) == len("name") && bytes.EqualFold(key, []byte("name")):
			if seen || string(key) != "name" {
				return false
			}
			seen = true
			if r.literal("null") {
				return true
			}
			var ok bool
			name, ok = r.plainString()
			return ok
		}
		return r.value(1)
	})
	if !ok {
		return "", false
	}
	return name, true
}

// toolAndTrace returns toolOf(params) and the trace context of a call:
// traceparent and tracestate from params._meta, else from the headers h
// (nil when there is none), reading params once.
func toolAndTrace(params json.RawMessage, h http.Header) (string, map[string]string) {
	p := readHead(params)
	return p.Name, p.trace(h)
}

// trace returns the trace context of a call whose params' head is p and
// whose headers are h: traceparent and tracestate from p.Meta, else from h
// (nil when there is none).
func (p callHead) trace(h http.Header) map[string]string {
	var out map[string]string
	for _, k := range []string{"traceparent", "tracestate"} {
		var v string
		if raw, ok := p.Meta[k]; ok && json.Unmarshal(raw, &v) == nil && v != "" {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[k] = v
		}
	}
	if out["traceparent"] == "" && h != nil {
		out = nil
		for _, k := range []string{"traceparent", "tracestate"} {
			// Looked up by the canonical form, which Get would otherwise
			// make anew each call.
			hk := "Traceparent"
			if k == "tracestate" {
				hk = "Tracestate"
			}
			if v := h.Get(hk); v != "" {
				if out == nil {
					out = make(map[string]string, 2)
				}
				out[k] = v
			}
		}
	}
	return out
}

// runName is the Run of a CallStart for key.
func runName(k scopeKey) string {
	if k.run == "" {
		return "default"
	}
	return logID(k.run)
}

// withMeta returns the params of a tools/call with the members of
// Options.CallMeta (trace context, say) added to params._meta, for the
// request forwarded upstream; params as they came when there are none or
// they cannot be read as an object.
func (p *Proxy) withMeta(ctx context.Context, params json.RawMessage) json.RawMessage {
	// An approved call goes upstream without the guard's own members.
	params = mcpguard.UpstreamParams(ctx, params)
	if p.opts.CallMeta == nil {
		return params
	}
	add := p.opts.CallMeta(ctx)
	if len(add) == 0 {
		return params
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil || obj == nil {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return params
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	for k, v := range add {
		meta[k] = mustJSON(v)
	}
	obj["_meta"] = mustJSON(meta)
	return mustJSON(obj)
}

// withMetaBody is withMeta for the JSON-RPC request body of a stateless
// call: body as it came when nothing is added.
func (p *Proxy) withMetaBody(ctx context.Context, body []byte, req *jsonrpc.Request) []byte {
	params := p.withMeta(ctx, req.Params)
	if string(params) == string(req.Params) {
		return body
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: req.ID, Method: req.Method, Params: params})
	if err != nil {
		return body
	}
	return b
}

// Ready reports whether the proxy takes requests: false once Drain has
// begun.
func (p *Proxy) Ready() bool { return !p.draining.Load() }
