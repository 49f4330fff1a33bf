package agent

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentpreflight/preflight"
)

// MaxEntries is the most entries a [Ledger] keeps, the most history entries
// [preflight.Decide] accepts.
const MaxEntries = 100

// LedgerOptions configures a [Ledger]. The zero value and nil both work.
type LedgerOptions struct {
	// Now is the clock used to stamp completed calls and to compute their
	// ages. Nil means time.Now. Tests pass a fake clock.
	Now func() time.Time
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
// A Ledger holds at most [MaxEntries] entries. Recording first drops entries
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
	now func() time.Time

	mu      sync.Mutex
	entries []Entry     // oldest recorded first
	at      []time.Time // completion time of entries[i]
}

// NewLedger returns an empty ledger. opts may be nil.
func NewLedger(opts *LedgerOptions) *Ledger {
	l := &Ledger{now: time.Now}
	if opts != nil && opts.Now != nil {
		l.now = opts.Now
	}
	return l
}

// Record stores the outcome of a tool call that has completed, stamped with
// the ledger's clock. Call it only after the real call returned: never for a
// call that was skipped, reused, blocked or deferred. It returns an error,
// and records nothing, when a required field is missing or malformed.
func (l *Ledger) Record(e Entry) error {
	if err := validateEntry(e); err != nil {
		return err
	}
	at := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropRedundant(e)
	l.entries = append(l.entries, e)
	l.at = append(l.at, at)
	for len(l.entries) > MaxEntries {
		l.remove(l.victim())
	}
	return nil
}

// History returns the ledger's entries as the history array of a
// [preflight.ToolCallRequest]: at most [MaxEntries], oldest recorded first,
// each AgeSeconds computed from the clock now. Ages are whole seconds plus
// up to three fraction digits (milliseconds, truncated), written as exact
// decimal text such as "60" or "12.25"; an entry stamped in the future of
// the clock has age "0". The slice is a fresh copy owned by the caller.
func (l *Ledger) History() []preflight.HistoryEntry {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := make([]preflight.HistoryEntry, len(l.entries))
	for i, e := range l.entries {
		h[i] = preflight.HistoryEntry{
			ToolCallID:      e.ToolCallID,
			Fingerprint:     e.Fingerprint,
			Outcome:         e.Outcome,
			ResultReference: e.ResultReference,
			AgeSeconds:      formatAge(now.Sub(l.at[i])),
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
		errs = append(errs, fmt.Errorf("Fingerprint %q is not 64 lowercase hex digits", e.Fingerprint))
	}
	switch e.Outcome {
	case preflight.OutcomeSuccess, preflight.OutcomeTerminalFailure, preflight.OutcomeTransientFailure:
	default:
		errs = append(errs, fmt.Errorf("Outcome %q is not success, terminal_failure or transient_failure", e.Outcome))
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

// dropRedundant removes the entries that e makes useless to Decide. The
// caller holds l.mu.
func (l *Ledger) dropRedundant(e Entry) {
	redundant := func(old Entry) bool {
		if old.Fingerprint != e.Fingerprint || old.Outcome != e.Outcome {
			return false
		}
		switch e.Outcome {
		case preflight.OutcomeSuccess:
			return old.GoalHash == e.GoalHash && (e.ResultReference != "" || old.ResultReference == "")
		case preflight.OutcomeTransientFailure:
			return true
		}
		return false
	}
	for i := len(l.entries) - 1; i >= 0; i-- {
		if redundant(l.entries[i]) {
			l.remove(i)
		}
	}
}

// victim picks the entry to evict: the oldest of the least useful class,
// never the newest entry. The caller holds l.mu and len(l.entries) > 1.
func (l *Ledger) victim() int {
	rank := func(e Entry) int {
		switch {
		case e.Outcome == preflight.OutcomeTransientFailure:
			return 0
		case e.Outcome == preflight.OutcomeSuccess && e.ResultReference == "":
			return 1
		case e.Outcome == preflight.OutcomeSuccess:
			return 2
		default:
			return 3
		}
	}
	best := 0
	for i := 1; i < len(l.entries)-1; i++ {
		if rank(l.entries[i]) < rank(l.entries[best]) {
			best = i
		}
	}
	return best
}

func (l *Ledger) remove(i int) {
	l.entries = append(l.entries[:i], l.entries[i+1:]...)
	l.at = append(l.at[:i], l.at[i+1:]...)
}
