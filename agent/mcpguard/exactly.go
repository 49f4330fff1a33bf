package mcpguard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent"
	"github.com/agentpreflight/preflight/agent/tools"
)

// Exactly once. A [Session] answers a tools/call that repeats one it has
// seen (the same params but for _meta: tool name, arguments and, for a
// continuation, requestState and inputResponses) without deciding or
// running it again, within the tool's idempotency window:
//
//   - while the first is in flight, the repeat waits for it and gets its
//     result (a client re-issues a call whose stream broke, with a new
//     JSON-RPC id);
//   - after the first succeeded, the repeat gets its result, for a tool
//     that is not read-only (a read-only tool's repeat is reused, or runs
//     again, as the guard decides);
//   - after the first ended with its outcome unknown (see
//     [ErrOutcomeUnknown]), a tool that is not read-only is not run again:
//     the repeat gets a result saying so.
//
// A failed call is not remembered: its repeat is decided again, under the
// retry cap. A call whose result is "input_required" (a multi-round trip
// of the 2026-07-28 revision) keeps its permit: the client's retry (the
// same tool and arguments, with inputResponses, and the requestState of
// that result when it had one) continues the same call, forwarded without
// a second decision, and the call is charged and recorded once, when it
// ends.
//
// With Options.Claims (replicas sharing a store) a call awaiting input is
// also parked in the claims, under a digest of its tool, arguments and
// requestState, for as long as it awaits: the replica that gets the
// client's retry takes it from there and continues the call (the
// reservation the first replica made is settled by the replica that ends
// the call), whichever replica relayed the input_required result.

// DefaultIdempotencySeconds is the idempotency window of a tool whose spec
// and Options.Defaults leave IdempotencySeconds empty: five minutes, as
// long as a proxy waits for a call by default, so that a call re-issued
// while the first may still run finds it.
const DefaultIdempotencySeconds = "300"

// ErrNotRun is what a forward function's error wraps when the call
// certainly did not run: the server could not be reached (no byte of the
// request was sent), or refused the request itself before any tool saw it
// (an HTTP 401, say, or a 400 whose error is one a server raises before
// dispatch: a protocol revision it does not serve). The call's
// reservation is given back and nothing is recorded: no money is spent
// and no failure counts for the retry cap (the attempt still counts
// against a call limit, as every reservation does). The error goes to the
// caller, and calls coalesced onto this one decide again. Only a call's
// first request is given back so: the retry of a multi-round call
// (input_required) follows a request that reached the tool, and ends the
// call as any failure does.
var ErrNotRun = errors.New("the call did not run: the MCP server refused it before running it")

// ErrOutcomeUnknown is what a forward function's error wraps when the call
// may have reached the server but no answer to it will come: the
// connection to the server ended mid-call, or the server answered with a
// failure of its own (an HTTP 500, say) that does not say whether the tool
// ran. The call is recorded as a terminal failure
// for a tool that is not read-only, and an identical call within the
// tool's idempotency window is not run.
var ErrOutcomeUnknown = errors.New("the outcome of the call is unknown: it may have reached the MCP server, and no answer to it came")

// The bounds of one Session's exactly-once state.
const (
	// maxRemembered bounds the completed calls remembered (a digest, a
	// time and a result reference each; the results themselves are in the
	// result store, under its own bounds).
	maxRemembered = 4096
	// maxContinuations bounds the calls awaiting the client's input; past
	// it an input_required result ends its call as a transient failure,
	// and the retry is decided as a new call.
	maxContinuations = 256
	// inputWait is how long a call awaits the client's retry after an
	// input_required result; then it ends as a transient failure (charged
	// once, as a call that ran).
	inputWait = 15 * time.Minute
)

// exactly is a Session's exactly-once state.
type exactly struct {
	replay tools.ResultStore // results kept for repeats (a view of the shared store, or the session's own)

	mu       sync.Mutex
	flights  map[string]*callFlight    // digest → call in flight
	done     map[string]*completedCall // digest → completed call, within its window
	awaiting map[string]*continuation  // tool and arguments → call awaiting the client's retry
	pending  map[string]time.Time      // approval nonce → its expiry (without shared claims)
}

// callFlight is a call in flight that repeats wait for.
type callFlight struct {
	ch     chan struct{}
	result json.RawMessage
	err    error
}

// completedCall is a completed call repeats are answered from.
type completedCall struct {
	ref     string    // its result in the replay store; "" when not held
	unknown bool      // it ended with its outcome unknown
	until   time.Time // the end of its window
}

// continuation is a call that answered input_required and awaits the
// client's retry.
type continuation struct {
	run    *tools.Running
	state  string // the requestState of its input_required result, "" for none
	digest string // of the call's first request, whose repeats get the input_required result while the call awaits
	timer  *time.Timer
	claims CallClaims // where it is parked for other processes, under key; nil when not
	key    string
}

// parked is a continuation as parked in the shared claims.
type parked struct {
	Call   tools.Handoff `json:"call"`
	Digest string        `json:"digest"`
}

// continuationKey names in the shared claims the call of name with args
// awaiting the retry that carries state.
func continuationKey(name string, args json.RawMessage, state string) string {
	h := sha256.Sum256([]byte(callOf(name, args) + "\x00" + state))
	return "cont:" + hex.EncodeToString(h[:])
}

// unpark takes c out of the shared claims: true when it was there (this
// process ends the call), false when another process took it (it ends
// the call; c is forgotten here). An error reading the claims counts as
// there: c's reservation is this process's to end.
func (c *continuation) unpark() bool {
	if c.claims == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := c.claims.Take(ctx, c.key)
	if err == nil && b == nil {
		c.run.Forget()
		return false
	}
	return true
}

func newExactly(results tools.ResultStore) *exactly {
	x := &exactly{flights: make(map[string]*callFlight), done: make(map[string]*completedCall),
		awaiting: make(map[string]*continuation), pending: make(map[string]time.Time)}
	switch st := results.(type) {
	case *tools.SharedResultStore:
		x.replay = st.View()
	default:
		x.replay = tools.NewMemoryResultStore(0, 0)
	}
	return x
}

// close drops the kept results and ends the calls awaiting input.
func (x *exactly) close() {
	x.mu.Lock()
	waiting := x.awaiting
	x.awaiting = make(map[string]*continuation)
	x.mu.Unlock()
	for _, c := range waiting {
		c.timer.Stop()
		if c.claims != nil {
			// Parked: another process may get the client's retry; the
			// reservation lasts until its lease.
			c.run.Forget()
			continue
		}
		c.abandon()
	}
	if v, ok := x.replay.(*tools.ResultView); ok {
		v.Close()
	}
}

// errAbandoned ends a call whose client never retried it after an
// input_required result.
var errAbandoned = errors.New("the client did not retry the call after its input_required result")

func (c *continuation) abandon() {
	if !c.unpark() {
		return
	}
	c.run.Finish(context.Background(), nil, preflight.OutcomeTransientFailure, errAbandoned)
}

// callDigest identifies a call for repeats: the SHA-256 of its params
// without _meta (which carries per-request things such as a progress
// token), keys sorted and numbers as written (canon, as readCall wrote
// them), and of extra.
func callDigest(canon []byte, extra []byte) string {
	var sum [sha256.Size]byte
	if len(extra) == 0 && cap(canon) > len(canon) {
		// The usual call: canon, which readCall made with room to spare,
		// and the separator hashed in one piece, without a hash.Hash.
		sum = sha256.Sum256(append(canon[:len(canon):len(canon)+1], 0))
	} else {
		h := sha256.New()
		h.Write(canon)
		h.Write([]byte{0})
		h.Write(extra)
		h.Sum(sum[:0])
	}
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], sum[:])
	return string(hx[:])
}

// requestState returns the requestState member of params or of a result,
// "" when there is none.
func requestState(raw json.RawMessage) string {
	var p struct {
		RequestState string `json:"requestState"`
	}
	json.Unmarshal(raw, &p)
	return p.RequestState
}

// callOf names a call by its tool and arguments, for the retries that
// continue it.
func callOf(name string, args json.RawMessage) string {
	return name + "\x00" + canonical(args)
}

// window returns the idempotency window of tool.
func (st *session) window(tool string) time.Duration {
	spec, _ := st.s.Tools().Spec(tool)
	secs, err := strconv.ParseInt(string(spec.IdempotencySeconds), 10, 64)
	if err != nil || secs <= 0 {
		return 0
	}
	return time.Duration(min(secs, 1e9)) * time.Second
}

// readOnly reports whether tool is read-only in the session's catalog.
func (st *session) readOnly(tool string) bool {
	ts := st.s.Tools()
	spec, _ := ts.Spec(tool)
	e, ok := ts.Catalog().EffectsOf(spec.Operation.Provider, tool)
	return ok && e == preflight.EffectsReadOnly
}

// kind is how a call ended, for what its repeats get.
type kind int

const (
	kindOther      kind = iota // failed, withheld or not run: a repeat is decided again
	kindSuccess                // succeeded: a repeat gets the result
	kindContinuing             // input_required: a repeat gets the same result
	kindUnknown                // the outcome is unknown: a repeat is not run
)

// once answers a call, params as sent (read into cp), through the
// exactly-once state: a repeat within the window joins or gets the first
// call's answer; anything else is guarded by call.
func (s *Session) once(ctx context.Context, params json.RawMessage, extra []byte, cp callParams,
	forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	name := cp.name
	window := s.st.window(name)
	digest := callDigest(cp.canon, extra)
	if window <= 0 {
		res, _, err := s.call(ctx, params, cp, digest, 0, forward)
		return res, err
	}
	x := s.x
	for {
		x.mu.Lock()
		if f := x.flights[digest]; f != nil {
			x.mu.Unlock()
			select {
			case <-f.ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if f.err == nil {
				noteRepeat(ctx)
				return f.result, nil
			}
			continue // the first failed: what it left decides this one
		}
		if c := x.done[digest]; c != nil && time.Now().Before(c.until) {
			x.mu.Unlock()
			noteRepeat(ctx)
			return s.repeat(ctx, c, name)
		}
		f := &callFlight{ch: make(chan struct{})}
		x.flights[digest] = f
		x.mu.Unlock()

		// Other processes guarding the scope: one of them may run the
		// call, or have run it.
		cl, token := s.g.opts.Claims, ""
		if cl != nil {
			tok, res, done, err := s.claim(ctx, cl, digest, name, window)
			if done || err != nil {
				x.mu.Lock()
				delete(x.flights, digest)
				x.mu.Unlock()
				f.result, f.err = res, err
				close(f.ch)
				return res, err
			}
			token = tok
		}

		res, k, err := s.call(ctx, params, cp, digest, window, forward)
		if k == kindSuccess && s.st.readOnly(name) {
			k = kindOther // reused or run again, as the guard decides
		}
		if cl != nil {
			s.unclaim(cl, digest, token, k, res, window)
		}
		var ref string
		if k == kindSuccess || k == kindContinuing {
			ref = s.keep(ctx, res, window)
		}
		x.mu.Lock()
		delete(x.flights, digest)
		x.remember(digest, k, ref, window)
		x.mu.Unlock()
		f.result, f.err = res, err
		close(f.ch)
		return res, err
	}
}

// keep saves a result for repeats, for window; "" when the store refused
// it.
func (s *Session) keep(ctx context.Context, res json.RawMessage, window time.Duration) string {
	var ref string
	var err error
	if ts, ok := s.x.replay.(tools.TTLResultStore); ok {
		ref, err = ts.PutTTL(ctx, res, window)
	} else {
		ref, err = s.x.replay.Put(ctx, res)
	}
	if err != nil {
		return ""
	}
	return ref
}

// remember records how the call digest ended, for its window. The caller
// holds x.mu.
func (x *exactly) remember(digest string, k kind, ref string, window time.Duration) {
	if k == kindOther {
		delete(x.done, digest)
		return
	}
	now := time.Now()
	if len(x.done) >= maxRemembered {
		var oldest string
		var at time.Time
		for d, c := range x.done {
			if now.After(c.until) {
				delete(x.done, d)
				continue
			}
			if oldest == "" || c.until.Before(at) {
				oldest, at = d, c.until
			}
		}
		if len(x.done) >= maxRemembered {
			delete(x.done, oldest)
		}
	}
	x.done[digest] = &completedCall{ref: ref, unknown: k == kindUnknown, until: now.Add(window)}
}

// repeat answers a repeat of the completed call c of tool.
func (s *Session) repeat(ctx context.Context, c *completedCall, tool string) (json.RawMessage, error) {
	if !c.unknown && c.ref != "" {
		if b, ok := s.x.replay.Get(ctx, c.ref); ok {
			return b, nil
		}
	}
	msg := "not run: an identical call of " + tool + " ran moments ago and succeeded, but its result is no longer held; it is not run twice within its idempotency window"
	if c.unknown {
		msg = "not run: the outcome of an identical call of " + tool + " is unknown (it may have reached the MCP server, and no answer to it came), so it may have taken effect; " +
			"check before calling again; it is not run twice within its idempotency window"
	}
	w := Withheld{Tool: tool, Decision: preflight.VerdictBlock, ReasonCodes: []preflight.ReasonCode{}, Message: msg}
	return json.Marshal(w.result(s.st.structured(tool)))
}

// call guards one call: a retry carrying the requestState of a call
// awaiting input continues that call; any other is decided, and forwarded
// when allowed. digest names the call's first request, window is its
// idempotency window (0 for none).
func (s *Session) call(ctx context.Context, params json.RawMessage, cp callParams, digest string, window time.Duration,
	forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, kind, error) {
	name, args := cp.name, cp.args
	if cp.retry {
		state := cp.state
		if isApprovalState(state) {
			return s.approved(ctx, params, name, args, state, digest, forward)
		}
		if c := s.x.take(callOf(name, args), state); c != nil && c.unpark() {
			// The call goes on: its first request, sent again, is a new call.
			s.x.mu.Lock()
			s.x.remember(c.digest, kindOther, "", 0)
			s.x.mu.Unlock()
			b, k, err := s.run(ctx, c.run, false, name, args, c.digest, forward)
			return s.st.chain.scrub(b), k, err
		}
		if r, digest, err := s.resume(ctx, name, args, state); err != nil {
			return nil, kindOther, err
		} else if r != nil {
			b, k, err := s.run(ctx, r, false, name, args, digest, forward)
			return s.st.chain.scrub(b), k, err
		}
	}
	if c := s.st.s.Tools().Consent(name, args); c.Needed {
		return s.ask(ctx, params, name, args, c, digest, forward)
	}
	return s.decide(ctx, params, name, args, digest, forward)
}

// decide decides a call and forwards it when allowed.
func (s *Session) decide(ctx context.Context, params json.RawMessage, name string, args json.RawMessage, digest string,
	forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, kind, error) {
	r, ans, err := s.st.s.Start(ctx, name, args)
	note(ctx, ans)
	noteUnchecked(ctx, s.st.uncheckedReason(name))
	var pe *preflight.Error
	switch {
	case errors.As(err, &pe):
		noteNotEvaluated(ctx)
		b, err := json.Marshal(notEvaluated(pe, name, args, s.st.structured(name)))
		return b, kindOther, err
	case err != nil:
		return nil, kindOther, err
	}
	req, dec := ans.Report.Request, ans.Report.Decision
	if r != nil {
		req, dec = r.Decided()
	}
	// Each receipt is signed as it goes out on a result, so that the
	// chain holds the receipts the client is given and no other: a call
	// whose forwarding failed is answered with an error, without one.
	switch {
	case r == nil && ans.How == tools.HowWithheld:
		b, err := json.Marshal(withheld(ans, name, s.st.structured(name)))
		if err != nil {
			return nil, kindOther, err
		}
		return s.st.chain.signInto(b, req, dec), kindOther, nil
	case r == nil: // reused or coalesced
		if ans.Outcome == preflight.OutcomeSuccess {
			return s.st.chain.signInto(ans.Result, req, dec), kindSuccess, nil
		}
		return s.st.chain.signInto(ans.Result, req, dec), kindOther, nil
	}
	b, k, err := s.run(ctx, r, true, name, args, digest, forward)
	if err != nil {
		return b, k, err
	}
	return s.st.chain.signInto(b, req, dec), k, nil
}

// run forwards the call r allowed and ends r with its outcome, or, when
// the result is input_required with a requestState, keeps r for the
// client's retry. first says that this is the call's first request: only
// then does an ErrNotRun give r back unrecorded, since a retry's call
// reached its tool with its first request.
func (s *Session) run(ctx context.Context, r *tools.Running, first bool, name string, args json.RawMessage, digest string,
	forward func(context.Context) (json.RawMessage, error)) (_ json.RawMessage, _ kind, err error) {
	kept := false
	defer func() {
		if !kept {
			r.Release() // after Finish a no-op; on a panic in forward it frees the reservation
		}
	}()
	b, ferr := forward(ctx)
	if first && errors.Is(ferr, ErrNotRun) {
		req, dec := r.Decided()
		r.Release()
		noteNotRun(ctx, req, dec)
		return nil, kindOther, ferr
	}
	if ferr != nil {
		outcome := s.st.failed(name, ferr)
		ans, err := r.Finish(ctx, nil, outcome, ferr)
		note(ctx, ans)
		if outcome == preflight.OutcomeTerminalFailure && abandoned(ferr) {
			return nil, kindUnknown, err
		}
		return nil, kindOther, err
	}
	facts := readResult(b)
	if facts.inputRequired {
		c := &continuation{run: r, state: requestState(b), digest: digest}
		s.park(ctx, c, name, args)
		if s.x.await(callOf(name, args), c) {
			kept = true
			return b, kindContinuing, nil
		}
		if !c.unpark() { // another process got the retry already: it ends the call
			kept = true
			return b, kindContinuing, nil
		}
		ans, err := r.Finish(ctx, b, preflight.OutcomeTransientFailure, nil)
		note(ctx, ans)
		return b, kindOther, err
	}
	outcome := facts.outcome
	ans, err := r.Finish(ctx, b, outcome, nil)
	note(ctx, ans)
	noteOutput(ctx, s.g.checkOutput(s.st, name, facts))
	if err != nil {
		return b, kindOther, err
	}
	if outcome == preflight.OutcomeSuccess {
		return b, kindSuccess, nil
	}
	return b, kindOther, nil
}

// abandoned reports whether a call's error leaves its outcome unknown: the
// connection ended, or the call was given up (cancelled, timed out) after
// it was forwarded.
func abandoned(err error) bool {
	return errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// await keeps c, the call named call, for the client's retry; false when
// too many calls await input already. One call per tool and arguments
// awaits at a time (an identical call is a repeat of it).
func (x *exactly) await(call string, c *continuation) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.awaiting[call]
	if old == nil && len(x.awaiting) >= maxContinuations {
		return false
	}
	if old != nil { // not expected (its repeats are answered from memory): the older call ends
		old.timer.Stop()
		go old.abandon()
	}
	x.awaiting[call] = c
	c.timer = time.AfterFunc(inputWait, func() {
		x.mu.Lock()
		mine := x.awaiting[call] == c
		if mine {
			delete(x.awaiting, call)
		}
		x.mu.Unlock()
		if mine {
			c.abandon()
		}
	})
	return true
}

// take returns the call named call awaiting a retry, when the retry's
// requestState is the one that call's input_required result gave, and
// removes it; nil otherwise.
func (x *exactly) take(call, state string) *continuation {
	x.mu.Lock()
	defer x.mu.Unlock()
	c := x.awaiting[call]
	if c == nil || c.state != state {
		return nil
	}
	delete(x.awaiting, call)
	c.timer.Stop()
	return c
}

// canonical returns the JSON value raw with object keys sorted and
// numbers as written ("null" for none).
func canonical(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "\x00" + string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// park parks c, a call of name with args awaiting input, in the shared
// claims, if any, for the process that gets the client's retry. When the
// claims refuse it, the call continues only in this process.
func (s *Session) park(ctx context.Context, c *continuation, name string, args json.RawMessage) {
	cl := s.g.opts.Claims
	if cl == nil {
		return
	}
	b, err := json.Marshal(parked{Call: c.run.Handoff(), Digest: c.digest})
	if err != nil {
		return
	}
	key := continuationKey(name, args, c.state)
	if cl.Park(context.WithoutCancel(ctx), key, b, inputWait) == nil {
		c.claims, c.key = cl, key
	}
}

// resume takes from the shared claims, if any, the call of name with
// args that another process parked awaiting the retry carrying state, and
// returns it Running here, with the digest of its first request; nil when
// there is none.
func (s *Session) resume(ctx context.Context, name string, args json.RawMessage, state string) (*tools.Running, string, error) {
	cl := s.g.opts.Claims
	if cl == nil {
		return nil, "", nil
	}
	b, err := cl.Take(ctx, continuationKey(name, args, state))
	if err != nil {
		return nil, "", fmt.Errorf("mcpguard: the call was not made: the shared call claims could not be read (%w): %w", agent.ErrStoreUnavailable, err)
	}
	if b == nil {
		return nil, "", nil
	}
	var p parked
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, "", fmt.Errorf("mcpguard: the call was not made: a continuation in the shared call claims is malformed: %w", err)
	}
	r, err := s.st.s.Resume(p.Call)
	if err != nil {
		return nil, "", fmt.Errorf("mcpguard: the call was not made: a continuation in the shared call claims is malformed: %w", err)
	}
	return r, p.Digest, nil
}
