package mcpguard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approvals. A tool whose spec has an Approval (see [tools.Approval] and
// [tools.Set.Consent]: "always", "destructive", or above a cost) is not
// run before a person consents to the exact call. A [Session] answers
// such a call, before deciding it and before reserving anything, with an
// "input_required" result (the multi-round trip of MCP 2026-07-28) whose
// one input request, under [ApprovalInputKey], is an elicitation/create
// that shows the call: the tool, its arguments, the estimated cost and
// why it asks (also as JSON in the elicitation's _meta under
// [ApprovalMetaKey]). Its requestState is sealed by the guard: an
// HMAC-SHA256 (Approvals.Key) over the call's fingerprint (preflight's
// requestFingerprint of the call: its provider, operation and arguments,
// keys sorted and numbers canonical), a digest of the
// principal and run (Approvals.Principal and Run), an expiry
// (Approvals.Wait) and a single-use nonce.
//
// The client's retry (the same tool and arguments, with that
// requestState and the person's answer in inputResponses) is checked:
// a state that does not verify, names another call, principal or run,
// has expired, or was used already runs nothing and costs nothing; nor
// does an answer other than accept with {"approve": true}. An accepted
// call is then decided as any call (the budget and the call limit still
// hold) and, when allowed, forwarded once, without the guard's
// requestState and inputResponses (see [UpstreamParams]). Nothing is
// reserved or recorded while a call awaits its approval. A request whose
// _meta client capabilities leave out elicitation is not asked: its call
// is not run.
//
// A client of an earlier protocol generation cannot retry an
// input_required result: for it the caller passes a function that sends
// the client an elicitation/create request and awaits its answer (see
// [WithElicit]), and the call waits for the person, unreserved.

// ApprovalInputKey is the key of the approval's elicitation in an
// input_required result's inputRequests, and of the answer in the
// retry's inputResponses.
const ApprovalInputKey = "io.agentpreflight/approval"

// ApprovalMetaKey is the _meta member of an approval's elicitation that
// carries the call as JSON: tool, arguments, estimatedCostUsd and reason.
const ApprovalMetaKey = "io.agentpreflight/approval"

// DefaultApprovalWait is how long an approval's requestState is valid
// when Approvals.Wait is zero.
const DefaultApprovalWait = 10 * time.Minute

// Approvals configures the approvals a [Session] asks for.
type Approvals struct {
	// Key signs the requestState of calls awaiting approval (HMAC-SHA256),
	// at least 32 bytes. Nil means a random key made once per process:
	// an approval then verifies only in the process that asked for it, so
	// that replicas sharing a store (Options.Claims) need one Key.
	Key []byte
	// Principal and Run name who calls and the run: a requestState is
	// valid only for the same two.
	Principal, Run string
	// Wait is how long an approval's requestState stays valid; zero means
	// DefaultApprovalWait.
	Wait time.Duration
}

// MinApprovalKeyBytes is the shortest Approvals.Key.
const MinApprovalKeyBytes = 32

// approvalPrefix starts every requestState the guard seals (a version).
const approvalPrefix = "pfa1."

// maxPendingApprovals bounds the approvals one Session awaits at once
// (without Options.Claims); past it a call that needs approval is not run.
const maxPendingApprovals = 4096

// processKey is the approval key of a process without Approvals.Key.
var processKey = sync.OnceValue(func() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
})

// approvalState is what a requestState seals.
type approvalState struct {
	Call  string `json:"c"` // the call's fingerprint
	Scope string `json:"s"` // digest of the principal and run
	Exp   int64  `json:"e"` // expiry, Unix seconds
	Nonce string `json:"n"` // single use
}

// fingerprint returns the requestFingerprint preflight gives the call of
// name with args (see adapt.Fingerprint: the one rule the adapters'
// approvals bind to as well).
func (s *Session) fingerprint(name string, args json.RawMessage) string {
	return adapt.Fingerprint(s.st.s.Tools(), name, args)
}

// scope is the digest of the principal and run: each length-prefixed, so
// that no other pair (such as "a\x00b" and "c" for "a" and "b\x00c")
// shares it.
func (a *Approvals) scope() string {
	h := sha256.New()
	for _, s := range []string{a.Principal, a.Run} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (a *Approvals) key() []byte {
	if len(a.Key) > 0 {
		return a.Key
	}
	return processKey()
}

func (a *Approvals) wait() time.Duration {
	if a.Wait > 0 {
		return a.Wait
	}
	return DefaultApprovalWait
}

func (a *Approvals) mac(payload string) []byte {
	m := hmac.New(sha256.New, a.key())
	m.Write([]byte(approvalPrefix + payload))
	return m.Sum(nil)
}

// stateEncoding decodes the parts of a requestState.
var stateEncoding = base64.RawURLEncoding.Strict()

// seal returns the requestState of st.
func (a *Approvals) seal(st approvalState) string {
	b, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return approvalPrefix + payload + "." + base64.RawURLEncoding.EncodeToString(a.mac(payload))
}

// open verifies a requestState; false when it is not one sealed with the
// key.
func (a *Approvals) open(state string) (approvalState, bool) {
	var st approvalState
	rest, ok := strings.CutPrefix(state, approvalPrefix)
	payload, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return st, false
	}
	// Strict: a state is accepted in the one spelling the guard wrote, not
	// in another whose unused low bits differ (altered text, same bytes).
	mac, err := stateEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(mac, a.mac(payload)) {
		return st, false
	}
	b, err := stateEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return st, false
	}
	return st, true
}

// isApprovalState reports whether a retry's requestState is one of the
// guard's (sealed or forged: it is checked as one).
func isApprovalState(state string) bool { return strings.HasPrefix(state, approvalPrefix) }

// ElicitFunc sends a client an elicitation/create request and returns its
// answer.
type ElicitFunc func(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)

type elicitKey struct{}

// WithElicit returns a context whose calls of [Session.CallTool] ask a
// person's approval by calling ask and waiting for its answer, instead of
// answering with an input_required result: for a client of a protocol
// generation before 2026-07-28, which never retries such a result. A
// call that ask fails for (the client cannot elicit, the session ended)
// is not run.
func WithElicit(ctx context.Context, ask ElicitFunc) context.Context {
	return context.WithValue(ctx, elicitKey{}, ask)
}

type upstreamKey struct{}

// UpstreamParams returns the params a forward function given to
// [Session.CallTool] sends upstream, the ctx being the one forward got:
// params as they came, except for a call a person approved through the
// guard's input_required result, whose requestState and inputResponses
// were the guard's own and are left out (the server gets the call as the
// client first sent it, arguments unchanged).
func UpstreamParams(ctx context.Context, params json.RawMessage) json.RawMessage {
	if ctx.Value(upstreamKey{}) == nil {
		return params
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params
	}
	delete(m, "requestState")
	delete(m, "inputResponses")
	b, err := json.Marshal(m)
	if err != nil {
		return params
	}
	return b
}

// elicitation is the elicitation that asks approval of the call of name
// with args.
func elicitation(name string, args json.RawMessage, c tools.Consent) *mcp.ElicitParams {
	shown := canonical(args)
	msg := (&adapt.Approval{Tool: name, Arguments: json.RawMessage(shown), EstimatedCostUSD: c.EstimatedCostUSD, Reason: c.Reason}).Message()
	var argv any = json.RawMessage(shown)
	if !json.Valid([]byte(shown)) {
		argv = nil
	}
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: msg,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Run this call",` +
			`"description":"true runs the call shown, once; false runs nothing"}},"required":["approve"]}`),
		Meta: mcp.Meta{ApprovalMetaKey: map[string]any{"tool": name, "arguments": argv,
			"estimatedCostUsd": json.Number(c.EstimatedCostUSD), "reason": c.Reason}},
	}
}

// approvedAnswer reports whether an elicitation's answer approves the
// call: action accept with content {"approve": true}.
func approvedAnswer(action string, content map[string]any) bool {
	ok, _ := content["approve"].(bool)
	return action == "accept" && ok
}

// ask answers a call of name with args that needs approval c: at once
// with an input_required result, or, with an ElicitFunc in ctx, by asking
// the client and then deciding the call.
func (s *Session) ask(ctx context.Context, params json.RawMessage, name string, args json.RawMessage, c tools.Consent, digest string,
	forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, kind, error) {
	if f, _ := ctx.Value(elicitKey{}).(ElicitFunc); f != nil {
		noteApproval(ctx, "asked")
		res, err := f(ctx, elicitation(name, args, c))
		if err != nil {
			noteApproval(ctx, "unavailable")
			return s.notApproved(name, "unavailable", "not run: "+name+" needs a person's approval, which could not be asked ("+err.Error()+")")
		}
		if !approvedAnswer(res.Action, res.Content) {
			noteApproval(ctx, "declined")
			return s.notApproved(name, "declined", "not run: the call of "+name+" was not approved")
		}
		noteApproval(ctx, "approved")
		return s.decide(ctx, params, name, args, digest, forward)
	}
	if !canElicit(params) {
		noteApproval(ctx, "unavailable")
		return s.notApproved(name, "unavailable", "not run: "+name+" needs a person's approval, and the client did not declare the elicitation capability (in _meta "+
			mcp.MetaKeyClientCapabilities+"), so it cannot be asked")
	}
	a := &s.g.opts.Approvals
	nonce := rand.Text()
	wait := a.wait()
	if err := s.x.hold(ctx, s.g.opts.Claims, nonce, wait); err != nil {
		noteApproval(ctx, "unavailable")
		if errors.Is(err, errTooManyApprovals) {
			return s.notApproved(name, "unavailable", "not run: "+name+" needs a person's approval, and too many calls await one; retry later")
		}
		return nil, kindOther, err
	}
	state := a.seal(approvalState{Call: s.fingerprint(name, args), Scope: a.scope(), Exp: time.Now().Add(wait).Unix(), Nonce: nonce})
	res := mcp.CallToolResult{InputRequests: mcp.InputRequestMap{ApprovalInputKey: elicitation(name, args, c)}, RequestState: state}
	b, err := json.Marshal(&res)
	if err != nil {
		return nil, kindOther, err
	}
	// The SDK sets resultType only as a server; the wire needs it.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, kindOther, err
	}
	delete(m, "content")
	m["resultType"] = json.RawMessage(`"input_required"`)
	noteApproval(ctx, "asked")
	b, err = json.Marshal(m)
	return b, kindOther, err
}

// canElicit reports whether a 2026-07-28 request's client may be sent an
// elicitation: its params._meta client capabilities, when it sends them,
// include elicitation. A request without them is taken to allow it.
func canElicit(params json.RawMessage) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(params, &p)
	raw, ok := p.Meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return true
	}
	var caps map[string]json.RawMessage
	json.Unmarshal(raw, &caps)
	e, ok := caps["elicitation"]
	return ok && string(e) != "null"
}

// approved answers the retry of a call that needed approval: state is the
// guard's requestState it carries.
func (s *Session) approved(ctx context.Context, params json.RawMessage, name string, args json.RawMessage, state, digest string,
	forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, kind, error) {
	a := &s.g.opts.Approvals
	st, ok := a.open(state)
	switch {
	case !ok || st.Call != s.fingerprint(name, args) || st.Scope != a.scope():
		noteApproval(ctx, "invalid")
		return s.notApproved(name, "invalid", "not run: the requestState of this call is not an approval the guard gave for this call, principal and run "+
			"(it was altered, or belongs to another call); call the tool again to be asked anew")
	case time.Now().Unix() > st.Exp:
		noteApproval(ctx, "expired")
		return s.notApproved(name, "expired", "not run: the approval of this call expired; call the tool again to be asked anew")
	}
	fresh, err := s.x.use(ctx, s.g.opts.Claims, st.Nonce)
	if err != nil {
		return nil, kindOther, err
	}
	if !fresh {
		noteApproval(ctx, "used")
		return s.notApproved(name, "used", "not run: this approval was used already (an approval runs its call once); call the tool again to be asked anew")
	}
	var p struct {
		InputResponses map[string]struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		} `json:"inputResponses"`
	}
	json.Unmarshal(params, &p)
	answer := p.InputResponses[ApprovalInputKey]
	if !approvedAnswer(answer.Action, answer.Content) {
		noteApproval(ctx, "declined")
		return s.notApproved(name, "declined", "not run: the call of "+name+" was not approved")
	}
	noteApproval(ctx, "approved")
	b, k, err := s.decide(context.WithValue(ctx, upstreamKey{}, true), params, name, args, digest, forward)
	if errors.Is(err, ErrNotRun) {
		// The server refused the call before running it: the approval was
		// not spent, and stands for the client's next retry until it
		// expires. Should it not be kept, the person is asked anew.
		if wait := time.Until(time.Unix(st.Exp, 0)); wait > 0 {
			s.x.hold(ctx, s.g.opts.Claims, st.Nonce, wait)
		}
	}
	return b, k, err
}

// notApproved is the result of a call run not for want of approval.
func (s *Session) notApproved(name, why, msg string) (json.RawMessage, kind, error) {
	w := Withheld{Tool: name, ReasonCodes: []preflight.ReasonCode{}, Approval: why, Message: msg}
	b, err := json.Marshal(w.result(s.st.structured(name)))
	return b, kindOther, err
}

// errTooManyApprovals: maxPendingApprovals await already.
var errTooManyApprovals = errors.New("too many calls await approval")

// hold records nonce as issued for wait: in the shared claims when there
// are any, else here.
func (x *exactly) hold(ctx context.Context, cl CallClaims, nonce string, wait time.Duration) error {
	if cl != nil {
		if err := cl.Park(context.WithoutCancel(ctx), "approval:"+nonce, []byte{'1'}, wait); err != nil {
			return fmt.Errorf("mcpguard: the call was not made: the shared call claims could not keep its approval (%w): %w", agent.ErrStoreUnavailable, err)
		}
		return nil
	}
	now := time.Now()
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.pending) >= maxPendingApprovals {
		for n, until := range x.pending {
			if now.After(until) {
				delete(x.pending, n)
			}
		}
		if len(x.pending) >= maxPendingApprovals {
			return errTooManyApprovals
		}
	}
	x.pending[nonce] = now.Add(wait)
	return nil
}

// use takes nonce: true the first time, false when it was used already
// (or never issued, or lapsed).
func (x *exactly) use(ctx context.Context, cl CallClaims, nonce string) (bool, error) {
	if cl != nil {
		b, err := cl.Take(ctx, "approval:"+nonce)
		if err != nil {
			return false, fmt.Errorf("mcpguard: the call was not made: the shared call claims could not be read (%w): %w", agent.ErrStoreUnavailable, err)
		}
		return b != nil, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.pending[nonce]
	delete(x.pending, nonce)
	return ok, nil
}
