package adapt

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight/agent/tools"
)

// CallIDs names calls for the model by its framework's call ids (ADK's
// function call id, eino's ToolInput.CallID, Genkit's tool request ref)
// instead of preflight's own step ids ("call-12"), which the model never
// saw. An adapter keeps one per session and hands it to Call and Start
// with WithCallID; the zero value is ready to use and it is safe for
// concurrent use. It remembers, per exact call (request fingerprint),
// the framework's id of the last run of it.
type CallIDs struct {
	mu sync.Mutex
	m  map[string]string
}

type callIDKey struct{}

type callID struct {
	ids *CallIDs
	id  string
}

// WithCallID returns ctx carrying the framework's id of the call about to
// be guarded, and ids to note it in: Call notes the id of a call that ran,
// and Call and Start name the call a withheld one repeats by the id it
// ran as. With no id nothing changes.
func WithCallID(ctx context.Context, ids *CallIDs, id string) context.Context {
	if ids == nil || id == "" {
		return ctx
	}
	return context.WithValue(ctx, callIDKey{}, callID{ids, id})
}

// Ran notes that the call ans answers ran under the framework's call id
// that ctx carries (see WithCallID), for a runtime that finishes calls
// itself (Start, then tools.Running.Finish).
func Ran(ctx context.Context, ans tools.Answer) {
	c, ok := ctx.Value(callIDKey{}).(callID)
	if !ok || ans.How != tools.HowRan || ans.Report.Decision == nil {
		return
	}
	c.ids.mu.Lock()
	defer c.ids.mu.Unlock()
	if c.ids.m == nil {
		c.ids.m = map[string]string{}
	}
	c.ids.m[ans.Report.Decision.RequestFingerprint] = c.id
}

// rename names the call w repeats by the framework's id it ran as, when
// ctx carries CallIDs that know it.
func rename(ctx context.Context, w *Withheld, ans tools.Answer) {
	c, ok := ctx.Value(callIDKey{}).(callID)
	d := ans.Report.Decision
	if !ok || w == nil || d == nil || w.Preflight.MatchedCallID == "" {
		return
	}
	c.ids.mu.Lock()
	id, known := c.ids.m[d.RequestFingerprint]
	c.ids.mu.Unlock()
	if !known {
		return
	}
	w.Error = strings.ReplaceAll(w.Error, "(call "+strconv.Quote(w.Preflight.MatchedCallID)+")", "(call "+strconv.Quote(id)+")")
	w.Preflight.MatchedCallID = id
}
