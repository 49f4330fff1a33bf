package mcpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// CallClaims is exactly-once state that several processes guarding one
// scope share (proxy replicas behind one load balancer, each with its own
// [Session] on a shared LedgerStore): a call's digest is claimed by the
// process that runs it, and the others answer its repeats from what that
// process recorded instead of running it a second time. Its methods must
// be atomic on their own; a store keeps the claims of one scope only, so
// that two scopes never see each other's digests or results.
//
// Options.Claims is read by [Session] only: Claim and Release for tools
// whose idempotency window is not zero, Park and Take for every call
// answered "input_required".
type CallClaims interface {
	// Claim claims digest for hold, unless a claim or a record of it is
	// there: then it returns that instead, and claims nothing. A claim
	// lapses after hold when its process never ends it (it died).
	Claim(ctx context.Context, digest string, hold time.Duration) (Claim, error)
	// Release ends the claim token made on digest: result, when not nil,
	// is kept for window as the answer of the call's repeats; unknown
	// keeps a record that the call's outcome is unknown for window; with
	// neither, or window 0, the claim is dropped and the next call of
	// digest is decided again. A claim that is no longer token's (it
	// lapsed, another process claimed) is left alone.
	Release(ctx context.Context, digest, token string, result []byte, unknown bool, window time.Duration) error
	// Park keeps state under key for ttl, replacing what was there: a
	// call that awaits the client's input (an "input_required" result),
	// for the process that gets the client's retry.
	Park(ctx context.Context, key string, state []byte, ttl time.Duration) error
	// Take removes what Park kept under key and returns it; nil when
	// there is none (never parked, lapsed, or taken already). Of two
	// processes taking one key, one gets it.
	Take(ctx context.Context, key string) ([]byte, error)
}

// Claim is what [CallClaims.Claim] found.
type Claim struct {
	// Token is set when the caller now holds the claim: pass it to
	// Release.
	Token string
	// Running is true when another process holds the claim: the call is
	// in flight there.
	Running bool
	// Result is the answer an earlier call of the digest left, within its
	// window.
	Result json.RawMessage
	// Unknown is true when an earlier call of the digest ended with its
	// outcome unknown, within its window.
	Unknown bool
}

// CodeRunningElsewhere is the JSON-RPC error code of a repeat answered
// with [ErrRunningElsewhere].
const CodeRunningElsewhere = -32010

// claimPoll is how often a repeat looks again at a call running in
// another process.
const claimPoll = 50 * time.Millisecond

// errRunningElsewhere is the answer to a repeat of a call that another
// process still runs when the repeat stops waiting for it.
func errRunningElsewhere(tool string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeRunningElsewhere, Message: "not run: an identical call of " + tool +
		" is in flight in another process guarding this run (a replica of the proxy); it is not run twice: " +
		"retry the same call later to get its result"}
}

// claimHold is how long a claim lasts when its process dies: the
// idempotency window, or longer when ctx allows the call to run longer.
func claimHold(ctx context.Context, window time.Duration) time.Duration {
	hold := window
	if d, ok := ctx.Deadline(); ok {
		hold = max(hold, time.Until(d)+5*time.Second)
	}
	return hold
}

// claim claims digest in the shared claims, waiting while another process
// runs the call (until shortly before ctx's deadline, or for window when
// ctx has none). It returns the
// claim's token, or, when another process ran the call, the answer for
// this repeat (done is true).
func (s *Session) claim(ctx context.Context, cl CallClaims, digest, name string, window time.Duration) (token string, res json.RawMessage, done bool, err error) {
	waitUntil := time.Now().Add(window)
	if d, ok := ctx.Deadline(); ok {
		// Time to answer before the deadline: a fifth of the wait, from
		// 250 ms to 2 s.
		waitUntil = d.Add(-min(max(time.Until(d)/5, 250*time.Millisecond), 2*time.Second))
	}
	for {
		c, err := cl.Claim(ctx, digest, claimHold(ctx, window))
		switch {
		case err != nil:
			return "", nil, false, fmt.Errorf("mcpguard: the call was not made: the shared call claims could not be read (%w): %w", agent.ErrStoreUnavailable, err)
		case c.Token != "":
			return c.Token, nil, false, nil
		case c.Unknown:
			noteRepeat(ctx)
			res, err := s.repeat(ctx, &completedCall{unknown: true}, name)
			return "", res, true, err
		case !c.Running && c.Result != nil:
			noteRepeat(ctx)
			return "", c.Result, true, nil
		case !c.Running:
			continue // the claim lapsed between two looks: claim again
		}
		if !time.Now().Add(claimPoll).Before(waitUntil) {
			return "", nil, true, errRunningElsewhere(name)
		}
		select {
		case <-ctx.Done():
			return "", nil, true, ctx.Err()
		case <-time.After(claimPoll):
		}
	}
}

// unclaim records in the shared claims how the call claimed with token
// ended.
func (s *Session) unclaim(cl CallClaims, digest, token string, k kind, res json.RawMessage, window time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch k {
	case kindSuccess, kindContinuing:
		_ = cl.Release(ctx, digest, token, res, false, window)
	case kindUnknown:
		_ = cl.Release(ctx, digest, token, nil, true, window)
	default:
		_ = cl.Release(ctx, digest, token, nil, false, 0)
	}
}
