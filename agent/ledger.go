package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentpreflight/preflight"
)

// LedgerOptions configures a [Ledger]. The zero value and nil both work.
type LedgerOptions struct {
	// Now is the clock used to stamp completed calls and to compute their
	// ages. Nil means time.Now. Tests pass a fake clock.
	Now func() time.Time
	// Store keeps the history. Nil means NewMemoryLedgerStore(Now). A
	// store shared by processes shares the history with them; Now is then
	// unused (the store keeps its own clock).
	Store LedgerStore
}

// Entry is the outcome of one real tool call, as given to [Ledger.Record].
type Entry struct {
	// ToolCallID identifies the call; it comes back as
	// ToolCallDecision.MatchedCallID on a reuse or a retry cap. Required.
	ToolCallID string
	// Fingerprint is the RequestFingerprint the decision for this call
	// returned: 64 lowercase hex digits. Required.
	Fingerprint string
	// Outcome is how the call ended. Required.
	Outcome preflight.Outcome
	// ResultReference is the caller's pointer to the saved result. A success
	// without one can never be reused.
	ResultReference string
	// GoalHash is the Task.GoalHash of the proposal; reuse needs it equal
	// and non-empty on both sides.
	GoalHash string
}

// Ledger is the history of one customer's run: the outcomes of tool calls
// that really happened, ready to be sent as ToolCallRequest.History.
//
// Create one with [NewLedger] per customer and run; there is no shared or
// package-level ledger, so histories of different customers never mix
// (spec: callers must not mix histories across customers). A Ledger is safe
// for concurrent use. It does no I/O and never calls a tool; it reads only
// its clock.
//
// # Retention
//
// A Ledger holds at most [preflight.MaxHistory] entries, the most history
// entries Decide accepts. Recording first drops entries
// the new one makes redundant for Decide, then, while there are too many,
// evicts the oldest entry of the least useful class:
//
//   - A success with a result reference replaces every older success with the
//     same fingerprint and goal hash (Decide reuses the youngest one, so the
//     older ones can never be chosen). A success without a reference replaces
//     older reference-less successes of the same fingerprint and goal hash.
//   - A transient failure replaces older transient failures of the same
//     fingerprint (Decide only notes that one exists).
//   - Terminal failures are never merged: Decide counts them against retryCap.
//   - Eviction order, oldest first within each class: transient failures,
//     successes without a reference, successes with a reference, terminal
//     failures last. The entry just recorded is never evicted.
type Ledger struct {
	store LedgerStore
}

// NewLedger returns an empty ledger. opts may be nil.
func NewLedger(opts *LedgerOptions) *Ledger {
	var now func() time.Time
	if opts != nil {
		if opts.Store != nil {
			return &Ledger{store: opts.Store}
		}
		now = opts.Now
	}
	return &Ledger{store: NewMemoryLedgerStore(now)}
}

// Record stores the outcome of a tool call that has completed, stamped with
// the ledger's clock. Call it only after the real call returned: never for a
// call that was skipped, reused, blocked or deferred. It returns an error,
// and records nothing, when a required field is missing or malformed.
func (l *Ledger) Record(e Entry) error {
	if err := validateEntry(e); err != nil {
		return err
	}
	return l.store.Append(context.Background(), e)
}

// History returns the ledger's entries as the history array of a
// [preflight.ToolCallRequest]: at most [preflight.MaxHistory], oldest
// recorded first, each AgeSeconds computed from the clock now. Ages are
// whole seconds plus up to three fraction digits (milliseconds,
// truncated), written as exact decimal text such as "60" or "12.25"; an
// entry stamped in the future of the clock has age "0". The slice is a
// fresh copy owned by the caller. The error is the store's, when a shared
// store (LedgerOptions.Store) cannot be read.
func (l *Ledger) History(ctx context.Context) ([]preflight.HistoryEntry, error) {
	st, err := l.store.State(ctx)
	if err != nil {
		return nil, err
	}
	return historyOf(st), nil
}

// historyOf returns st's entries as a request's history.
func historyOf(st LedgerState) []preflight.HistoryEntry {
	h := make([]preflight.HistoryEntry, len(st.History))
	for i, e := range st.History {
		h[i] = preflight.HistoryEntry{
			ToolCallID:      e.ToolCallID,
			Fingerprint:     e.Fingerprint,
			Outcome:         e.Outcome,
			ResultReference: e.ResultReference,
			AgeSeconds:      formatAge(st.Now.Sub(e.At)),
			GoalHash:        e.GoalHash,
		}
	}
	return h
}

func validateEntry(e Entry) error {
	var errs []error
	if e.ToolCallID == "" {
		errs = append(errs, errors.New("ToolCallID is empty"))
	}
	if !isFingerprint(e.Fingerprint) {
		errs = append(errs, fmt.Errorf("the Fingerprint %q is not 64 lowercase hex digits", e.Fingerprint))
	}
	switch e.Outcome {
	case preflight.OutcomeSuccess, preflight.OutcomeTerminalFailure, preflight.OutcomeTransientFailure:
	default:
		errs = append(errs, fmt.Errorf("the Outcome %q is not success, terminal_failure or transient_failure", e.Outcome))
	}
	if len(errs) > 0 {
		return fmt.Errorf("agent: cannot record entry: %w", errors.Join(errs...))
	}
	return nil
}

func isFingerprint(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
