package adapt

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/agent/tools"
)

// Approvals. A call whose tool needs a person's consent (tools.Spec.Approval,
// decided by tools.Set.Consent) is never run unapproved. An adapter whose
// framework has no way to pause a run for a person (Call and Start alone)
// does not run it at all: it is withheld with Decision.Approval
// "unavailable". An adapter whose framework has one (ADK's tool
// confirmation, Genkit's tool interrupts, eino's interrupts) asks
// through it: Approvals.Ask returns the Approval to show the person, and
// the framework's resumed call hands the person's answer and the
// Approval's Ticket to Approvals.Answer. Only an approval of the same
// call (the same requestFingerprint: tool, provider and arguments, keys
// sorted and numbers canonical), not yet used and not expired, lets Call
// or Start decide the call, once, as any other (the budget and the call
// limit still hold). A decline, an altered, replayed or expired approval
// runs nothing and spends nothing, and nothing is reserved while a call
// waits for its answer.

// Approval statuses: Decision.Approval of a call not run for want of
// approval, and what Approvals.Answer reports.
const (
	// ApprovalUnavailable: the adapter cannot ask (its framework has no
	// pause), or too many calls await an answer.
	ApprovalUnavailable = "unavailable"
	// ApprovalAsked: the call waits for a person's answer.
	ApprovalAsked = "asked"
	// ApprovalApproved: the person approved the call (it is then decided).
	ApprovalApproved = "approved"
	// ApprovalDeclined: the person declined the call.
	ApprovalDeclined = "declined"
	// ApprovalInvalid: the answer names no approval given for this call
	// (its ticket is unknown, or it was given for other arguments).
	ApprovalInvalid = "invalid"
	// ApprovalUsed: the approval ran its call already.
	ApprovalUsed = "used"
	// ApprovalExpired: the approval was answered after Approvals.Wait.
	ApprovalExpired = "expired"
)

// DefaultApprovalWait is how long an Approval can be answered when
// Approvals.Wait is zero.
const DefaultApprovalWait = 10 * time.Minute

// maxPendingApprovals bounds the calls one Approvals awaits at once;
// past it a call that needs approval is not run.
const maxPendingApprovals = 4096

// Approval is what a person is shown to approve one call: the same
// fields the MCP guard's elicitation shows.
type Approval struct {
	// Tool is the tool to run.
	Tool string `json:"tool"`
	// Arguments are the call's arguments, as JSON.
	Arguments json.RawMessage `json:"arguments"`
	// EstimatedCostUSD is what the call is expected to cost.
	EstimatedCostUSD json.Number `json:"estimatedCostUsd"`
	// Reason says why the person is asked.
	Reason string `json:"reason"`
	// RequestFingerprint is preflight's requestFingerprint of the call:
	// the approval is for this call only.
	RequestFingerprint string `json:"requestFingerprint"`
	// Ticket names this approval in the answer; it runs its call once.
	Ticket string `json:"ticket"`
}

// Message is the approval as a sentence for a person. In the tool name,
// the arguments and the reason (which names the tool), characters that
// reorder or hide text when shown (bidirectional controls, zero-width and
// other invisible characters, line breaks) are written as JSON \u escapes,
// so that what the person reads is the call that runs, one item a line.
func (a *Approval) Message() string {
	return "Approve this tool call? It runs once if you approve.\nTool: " + visible(a.Tool) + "\nArguments: " + visible(string(a.Arguments)) +
		"\nEstimated cost: $" + string(a.EstimatedCostUSD) + "\nWhy you are asked: " + visible(a.Reason)
}

// visible returns text (JSON or plain) with each character that is not printable
// (format characters such as U+202E and U+200B, separators other than
// the space) written as a \u escape, which JSON reads as the same
// character.
func visible(js string) string {
	i := strings.IndexFunc(js, hidden)
	if i < 0 {
		return js
	}
	b := []byte(js[:i])
	for _, r := range js[i:] {
		if !hidden(r) {
			b = utf8.AppendRune(b, r)
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			b = fmt.Appendf(b, `\u%04x\u%04x`, r1, r2)
		} else {
			b = fmt.Appendf(b, `\u%04x`, r)
		}
	}
	return string(b)
}

func hidden(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }

// Approvals are the calls of one adapter's session awaiting a person's
// answer. The zero value is ready to use; it is safe for concurrent use.
type Approvals struct {
	// Wait is how long an approval can be answered; zero means
	// DefaultApprovalWait.
	Wait time.Duration

	mu      sync.Mutex
	pending map[string]pendingApproval // by ticket
	byKey   map[string]string          // tickets by the framework's call id (AskFor)
}

type pendingApproval struct {
	tool, fingerprint, key string
	until                  time.Time
}

// Ask returns the approval a call of tool with args needs before it runs,
// and records it as awaiting an answer; nil when the call needs none
// (tools.Set.Consent). It reserves nothing. When too many calls await an
// answer it returns nil and w, the call's result for the model (not run,
// approval "unavailable").
func (a *Approvals) Ask(s *tools.Session, tool string, args json.RawMessage) (ap *Approval, w *Withheld) {
	return a.AskFor("", s, tool, args)
}

// AskFor is Ask that also notes the approval under key, the framework's
// id of the call (ADK's function call id, Genkit's tool request ref), for
// frameworks whose resumed call carries that id but not the ticket: see
// TicketFor. An empty key notes nothing.
func (a *Approvals) AskFor(key string, s *tools.Session, tool string, args json.RawMessage) (ap *Approval, w *Withheld) {
	c := s.Tools().Consent(tool, args)
	if !c.Needed {
		return nil, nil
	}
	fp := Fingerprint(s.Tools(), tool, args)
	wait := a.Wait
	if wait <= 0 {
		wait = DefaultApprovalWait
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		a.pending, a.byKey = map[string]pendingApproval{}, map[string]string{}
	}
	if len(a.pending) >= maxPendingApprovals {
		for t, p := range a.pending {
			if now.After(p.until) {
				a.forget(t, p)
			}
		}
		if len(a.pending) >= maxPendingApprovals {
			return nil, NotApproved(tool, ApprovalUnavailable, "not run: "+tool+" needs a person's approval, and too many calls await one; call it again later")
		}
	}
	ticket := rand.Text()
	if old, ok := a.byKey[key]; ok && key != "" {
		a.forget(old, a.pending[old]) // the same call id asked again: the earlier approval is void
	}
	a.pending[ticket] = pendingApproval{tool: tool, fingerprint: fp, key: key, until: now.Add(wait)}
	if key != "" {
		a.byKey[key] = ticket
	}
	shown := args
	if !json.Valid(shown) {
		shown, _ = json.Marshal(string(args))
	}
	return &Approval{Tool: tool, Arguments: append(json.RawMessage(nil), shown...), EstimatedCostUSD: c.EstimatedCostUSD,
		Reason: c.Reason, RequestFingerprint: fp, Ticket: ticket}, nil
}

// forget drops the pending approval p named ticket; a.mu is held.
func (a *Approvals) forget(ticket string, p pendingApproval) {
	delete(a.pending, ticket)
	if p.key != "" && a.byKey[p.key] == ticket {
		delete(a.byKey, p.key)
	}
}

// TicketFor returns the ticket of the approval AskFor noted under key and
// still awaiting an answer, "" when there is none.
func (a *Approvals) TicketFor(key string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byKey[key]
}

type approvedKey struct{}

// Answer takes a person's answer to the approval named by ticket, for the
// call of tool with args the framework resumes: approve true runs it.
// The ticket is used up whatever the answer. It returns the status (one
// of ApprovalApproved, ApprovalDeclined, ApprovalInvalid, ApprovalUsed,
// ApprovalExpired) and, when approved, a context under which Call and
// Start decide this one call instead of asking again; otherwise w, the
// call's result for the model, and ctx unchanged.
func (a *Approvals) Answer(ctx context.Context, s *tools.Session, ticket, tool string, args json.RawMessage, approve bool) (context.Context, string, *Withheld) {
	a.mu.Lock()
	p, ok := a.pending[ticket]
	if ok {
		a.forget(ticket, p)
	}
	a.mu.Unlock()
	switch {
	case !ok:
		return ctx, ApprovalInvalid, NotApproved(tool, ApprovalInvalid, "not run: the answer names no approval that awaits one for this call "+
			"(it was used already, or never given); call the tool again to be asked anew")
	case p.tool != tool || p.fingerprint != Fingerprint(s.Tools(), tool, args):
		return ctx, ApprovalInvalid, NotApproved(tool, ApprovalInvalid, "not run: the approval was given for another call than this one "+
			"(other arguments or another tool); call the tool again to be asked anew")
	case time.Now().After(p.until):
		return ctx, ApprovalExpired, NotApproved(tool, ApprovalExpired, "not run: the approval of this call expired; call the tool again to be asked anew")
	case !approve:
		return ctx, ApprovalDeclined, NotApproved(tool, ApprovalDeclined, "not run: a person declined the call of "+tool+"; do not call it again unless asked to")
	}
	return context.WithValue(ctx, approvedKey{}, &approved{fingerprint: p.fingerprint}), ApprovalApproved, nil
}

// approved is an approval Answer accepted: it lets one call with its
// fingerprint be decided.
type approved struct {
	fingerprint string
	once        atomic.Bool
}

// take reports whether ctx carries an accepted approval of the call of
// tool with args in s not taken yet, and takes it.
func take(ctx context.Context, s *tools.Session, tool string, args json.RawMessage) bool {
	a, _ := ctx.Value(approvedKey{}).(*approved)
	return a != nil && a.fingerprint == Fingerprint(s.Tools(), tool, args) && a.once.CompareAndSwap(false, true)
}

// NotApproved is the result for the model of a call of tool not run for
// want of approval: status is Decision.Approval, msg the sentence.
func NotApproved(tool, status, msg string) *Withheld {
	w := &Withheld{Error: msg, Preflight: Decision{Tool: tool, Approval: status}}
	w.fill()
	return w
}

// Fingerprint returns preflight's requestFingerprint of the call of name
// with args in set (of its provider, operation and arguments, keys sorted
// and numbers canonical), or, when preflight cannot evaluate the
// arguments, "call:" and the SHA-256 of the name and the arguments as
// given.
func Fingerprint(set *tools.Set, name string, args json.RawMessage) string {
	req := set.Proposal(name, args)
	req.RunID, req.StepID, req.Budget.RemainingUSD = "approval", "approval", "0" // not part of the fingerprint
	if d, err := set.Catalog().Decide(&req); err == nil && d.RequestFingerprint != "" {
		return d.RequestFingerprint
	}
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(args)
	return "call:" + hex.EncodeToString(h.Sum(nil))
}
