package preflight

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/strictjson"
)

// Reading a request built in Go. Check and Decide apply to Go values the
// rules CheckJSON and DecideJSON apply to JSON text, and report a broken
// one as the same request sent as JSON (as encoding/json writes it: members
// in declaration order, map keys sorted, empty omitempty members left out)
// would be reported: problems a parser would stop at first (a string that
// is not UTF-8, a raw member that is not JSON, a depth or node limit), in
// document order and one only, then every broken input rule at once, in
// the decoder's order. Nothing is encoded: strings and numbers are checked
// where they are, and only the raw JSON members (Query, Body, Schema,
// Tool.Request) are parsed, each on its own, within what the whole
// document's limits leave for it. One limit is looser: the parser's
// 64 MiB bound on a document applies to each raw member, not to the
// request they would make up together.

// Depth limits of a check request's raw members parsed on their own: in
// the document, query and body sit at level 3, the schema at level 2.
var (
	checkRawLimits    = strictjson.Limits{MaxDepth: maxCheckDepth - 2}
	checkSchemaLimits = strictjson.Limits{MaxDepth: maxCheckDepth - 1}
)

// readCheckRequest reads req into in. The trees it parses are released by
// in.release.
func readCheckRequest(req *CheckRequest, in *checkInput) *Error {
	r := &req.Request
	if e := firstInvalidUTF8(r); e != nil {
		return e
	}
	schema := req.Schema
	if len(schema) == 0 {
		schema = jsonNull // encoding/json writes a nil RawMessage as null
	}
	// One private copy of the three texts: the trees read it, never the
	// caller's slices.
	buf := make([]byte, 0, len(r.Query)+len(r.Body)+len(schema))
	buf = append(append(append(buf, r.Query...), r.Body...), schema...)
	query, body, sch := buf[:len(r.Query)], buf[len(r.Query):len(r.Query)+len(r.Body)], buf[len(r.Query)+len(r.Body):]
	var err *Error
	if len(query) > 0 {
		if in.query, err = in.parse(query, "/request/query", checkRawLimits); err != nil {
			return err
		}
	}
	if len(body) > 0 {
		if in.body, err = in.parse(body, "/request/body", checkRawLimits); err != nil {
			return err
		}
	}
	if c := schemaCacheNow.Load(); c != nil && len(sch) <= MaxSchemaBytes {
		if in.cached = c.lookupCheckSchema(sch); in.cached != nil {
			in.rawSch = in.cached.tree // a text the cache holds parses, within these limits
		}
	}
	if in.cached == nil {
		if in.rawSch, err = in.parse(sch, "/schema", checkSchemaLimits); err != nil {
			return err
		}
	}

	var d decoder
	in.method, in.url = r.Method, r.URL
	d.method(r.Method, "/request")
	d.url(r.URL, "/request")
	in.headers = in.headerRoom[:0]
	if duplicateHeaders(r.Headers) {
		names := make([]string, 0, len(r.Headers))
		for name := range r.Headers {
			names = append(names, name)
		}
		slices.Sort(names) // the order encoding/json writes them in
		for _, name := range names {
			if !d.sameHeader(in.headers, name, "/request") {
				in.headers = append(in.headers, header{name, r.Headers[name]})
			}
		}
	} else {
		for name, value := range r.Headers {
			in.headers = append(in.headers, header{name, value})
		}
	}
	if in.query.IsValid() {
		d.query(in.query, "/request")
	}
	d.schema(in)
	if e := req.Economics; e != nil {
		in.econ = d.goEconomics(e, &in.econRoom)
	}
	return d.err()
}

var jsonNull = []byte("null")

// parse parses text, the member at pointer at, within lim, and keeps the
// tree for release.
func (in *checkInput) parse(text []byte, at string, lim strictjson.Limits) (strictjson.Value, *Error) {
	v, err := strictjson.ParseScratch(text, lim)
	if err != nil {
		return strictjson.Value{}, parseErrorAt(err, at, checkLimits)
	}
	in.trees = append(in.trees, v)
	return v, nil
}

// release gives back the trees parse kept.
func (in *checkInput) release() {
	for _, v := range in.trees {
		v.Release()
	}
}

// duplicateHeaders reports whether two names in h differ only in the case
// of ASCII letters.
func duplicateHeaders(h map[string]string) bool {
	if len(h) < 2 {
		return false
	}
	var local [8]string
	seen := local[:0]
	for name := range h {
		for _, s := range seen {
			if equalFoldASCII(s, name) {
				return true
			}
		}
		seen = append(seen, name)
	}
	return false
}

// firstInvalidUTF8 returns the error for the first string of r, in
// document order, that is not UTF-8.
func firstInvalidUTF8(r *ProposedRequest) *Error {
	if !utf8.ValidString(r.Method) {
		return invalidUTF8Error("/request/method", utf8Message)
	}
	if !utf8.ValidString(r.URL) {
		return invalidUTF8Error("/request/url", utf8Message)
	}
	bad := ""
	found := false
	for name, value := range r.Headers {
		if (!utf8.ValidString(name) || !utf8.ValidString(value)) && (!found || name < bad) {
			bad, found = name, true
		}
	}
	if !found {
		return nil
	}
	if !utf8.ValidString(bad) {
		// A pointer cannot name a member whose name is not UTF-8; the
		// parser points at the object holding it.
		return invalidUTF8Error("/request/headers", utf8Message)
	}
	return invalidUTF8Error("/request/headers/"+strictjson.EscapePointerToken(bad), utf8Message)
}

// goEconomics reads e into f by the rules economics applies to JSON.
func (d *decoder) goEconomics(e *CheckEconomics, f *checkFacts) *checkFacts {
	const path = "/economics"
	if s, ok := d.goNumber(e.DownstreamCostUSD, memberPath{path, "downstreamCostUsd"}, true); ok {
		f.down, _ = d.amountText(s, memberPath{path, "downstreamCostUsd"}, maxNumeric)
	}
	f.bills = e.BillsOnInvalidRequest
	if s, ok := d.goNumber(e.RetryCostUSD, memberPath{path, "retryCostUsd"}, true); ok {
		f.retry, _ = d.amountText(s, memberPath{path, "retryCostUsd"}, maxNumeric)
	}
	f.prior, f.price = defaultPrior, defaultCheckPrice
	if s, ok := d.goNumber(e.PriorInvalidProbability, memberPath{path, "priorInvalidProbability"}, false); ok {
		f.prior, _ = d.amountText(s, memberPath{path, "priorInvalidProbability"}, "1")
	}
	if s, ok := d.goNumber(e.PreflightPriceUSD, memberPath{path, "preflightPriceUsd"}, false); ok {
		f.price, _ = d.amountText(s, memberPath{path, "preflightPriceUsd"}, maxNumeric)
	}
	if s, ok := d.goNumber(e.BudgetRemainingUSD, memberPath{path, "budgetRemainingUsd"}, false); ok {
		f.budget, f.hasBudget = d.amountText(s, memberPath{path, "budgetRemainingUsd"}, maxNumeric)
	}
	return f
}

// Where a tool-call request's payload sits: at level 3, after six values
// (the request object, runId, stepId, tool, provider, operation).
const payloadNodesBefore = 6

var payloadLimits = strictjson.Limits{MaxDepth: maxToolCallDepth - 2, MaxNodes: maxToolCallNodes - payloadNodesBefore}

// readToolCallRequest reads req into in. The payload's tree is released
// by in.tree.Release, or kept in in.memo when in.keep is set: the tree
// parsed from the same bytes before is taken from there.
func readToolCallRequest(req *ToolCallRequest, in *toolCallInput) *Error {
	t := &req.Tool
	for _, s := range []struct{ at, s string }{{"/runId", req.RunID}, {"/stepId", req.StepID},
		{"/tool/provider", t.Provider}, {"/tool/operation", t.Operation}} {
		if !utf8.ValidString(s.s) {
			return invalidUTF8Error(s.at, utf8Message)
		}
	}
	text := t.Request
	if len(text) == 0 {
		text = jsonNull // encoding/json writes a nil RawMessage as null
	}
	var payload strictjson.Value
	if m := &in.memo; in.keep && m.Payload.IsValid() && bytes.Equal(m.Request, text) {
		payload = m.Payload
	} else {
		own := slices.Clone(text)
		var err error
		if payload, err = strictjson.ParseScratch(own, payloadLimits); err != nil {
			return parseErrorAt(err, "/tool/request", toolCallLimits)
		}
		if in.keep {
			in.memo.Release()
			in.memo.Request, in.memo.Payload = own, payload
		} else {
			in.tree = payload
		}
	}
	// The values after the payload: their strings, and the node limit
	// when the payload leaves too little room for them.
	room := maxToolCallNodes // no limit can be reached
	if payloadNodesBefore+len(text)+tailNodesAtMost(req) > maxToolCallNodes {
		room = maxToolCallNodes - payloadNodesBefore - countNodes(payload)
	}
	w := tailWalk{room: room}
	w.walk(req)
	if w.err != nil {
		return w.err
	}
	if len(req.History) > MaxHistory {
		return tooMuchHistory(len(req.History))
	}

	var d decoder
	f := &in.facts
	d.goString(req.RunID, memberPath{"", "runId"}, 1)
	d.goString(req.StepID, memberPath{"", "stepId"}, 1)
	d.goString(t.Provider, memberPath{"/tool", "provider"}, 1)
	d.goString(t.Operation, memberPath{"/tool", "operation"}, 1)
	if d.payload(payload, "/tool") {
		in.payload = payload
	}
	f.external, _ = d.goAmount(t.EstimatedExternalCostUSD, memberPath{"/tool", "estimatedExternalCostUsd"}, true)
	f.model, _ = d.goAmount(t.EstimatedModelCostUSD, memberPath{"/tool", "estimatedModelCostUsd"}, false)
	b := &req.Budget
	f.remaining, _ = d.goAmount(b.RemainingUSD, memberPath{"/budget", "remainingUsd"}, true)
	f.reserved, _ = d.goAmount(b.ReservedUSD, memberPath{"/budget", "reservedUsd"}, false)
	if s, ok := d.goNumber(b.MaxToolCallsRemaining, memberPath{"/budget", "maxToolCallsRemaining"}, false); ok {
		f.maxCalls, f.limitsCalls = d.integerText(s, memberPath{"/budget", "maxToolCallsRemaining"}, 0)
	}
	if n := len(req.History); n > 0 {
		f.ages = make([]decimal.Dec, n)
	}
	for i := range req.History {
		h := &req.History[i]
		d.outcome(h.Outcome, historyPath(i))
		if s, ok := d.goNumber(h.AgeSeconds, memberPath{historyPath(i), "ageSeconds"}, true); ok {
			f.ages[i], _ = d.amountText(s, memberPath{historyPath(i), "ageSeconds"}, maxNumeric)
		}
	}
	f.ttl, _ = d.goAmount(req.FreshnessTTLSeconds, memberPath{"", "freshnessTtlSeconds"}, false)
	if s, ok := d.goNumber(req.RetryCap, memberPath{"", "retryCap"}, false); ok {
		f.retryCap, _ = d.integerText(s, memberPath{"", "retryCap"}, 1)
	}
	f.price = defaultDecidePrice
	if s, ok := d.goNumber(req.PreflightPriceUSD, memberPath{"", "preflightPriceUsd"}, false); ok {
		f.price, _ = d.amountText(s, memberPath{"", "preflightPriceUsd"}, maxNumeric)
	}
	return d.err()
}

// historyPath is the pointer of history entry i.
func historyPath(i int) string { return "/history/" + strconv.Itoa(i) }

// goString checks s, a string of a request built in Go, as str checks the
// same string sent as JSON.
func (d *decoder) goString(s string, at memberPath, minLen int) {
	if len(s) < minLen {
		d.add(at.String(), IssueMinLength, "expected a non-empty string")
	}
}

// goAmount is goNumber then amountText.
func (d *decoder) goAmount(n json.Number, at memberPath, required bool) (decimal.Dec, bool) {
	s, ok := d.goNumber(n, at, required)
	if !ok {
		return decimal.Dec{}, false
	}
	return d.amountText(s, at, maxNumeric)
}

// countNodes counts the values of v, v included.
func countNodes(v strictjson.Value) int {
	n := 1
	if k := v.Kind(); k == strictjson.Object || k == strictjson.Array {
		for it := v.Iter(); it.Next(); {
			n += countNodes(it.Value())
		}
	}
	return n
}

// tailNodesAtMost bounds the values that follow a tool-call request's
// payload when it is sent as JSON.
func tailNodesAtMost(req *ToolCallRequest) int {
	// tool: 2 costs; budget: 4; task: 2; history: 1, and 7 per entry;
	// capabilities: 3; freshnessTtlSeconds, retryCap, preflightPriceUsd.
	return 2 + 4 + 2 + 1 + 7*len(req.History) + 3 + 3
}

// tailWalk visits the values that follow a tool-call request's payload
// in the order encoding/json writes them, as the parser would: counting
// each against the node limit (room values may follow the payload) and
// checking each string's UTF-8. err is the first problem.
type tailWalk struct {
	n, room int
	err     *Error
}

// node counts the value at the pointer parent + (entry i, when i >= 0)
// + (member name, when not empty), and reports whether the walk goes on.
func (w *tailWalk) node(parent string, i int, name string) bool {
	if w.err != nil {
		return false
	}
	if w.n++; w.n > w.room {
		w.err = issuesError([]Issue{{Path: pointerOf(parent, i, name), Code: IssueMaxNodes, Message: nodesMessage(maxToolCallNodes)}})
		return false
	}
	return true
}

// str is node for a string value s.
func (w *tailWalk) str(parent string, i int, name, s string) {
	if w.node(parent, i, name) && !utf8.ValidString(s) {
		w.err = invalidUTF8Error(pointerOf(parent, i, name), utf8Message)
	}
}

// num is node for a json.Number, written when not empty or when required.
func (w *tailWalk) num(parent, name string, n json.Number, required bool) {
	if n != "" || required {
		w.node(parent, -1, name)
	}
}

func pointerOf(parent string, i int, name string) string {
	p := parent
	if i >= 0 {
		p += "/" + strconv.Itoa(i)
	}
	if name != "" {
		p += "/" + name
	}
	return p
}

func (w *tailWalk) walk(req *ToolCallRequest) {
	t := &req.Tool
	w.num("/tool", "estimatedExternalCostUsd", t.EstimatedExternalCostUSD, true)
	w.num("/tool", "estimatedModelCostUsd", t.EstimatedModelCostUSD, false)
	b := &req.Budget
	w.node("/budget", -1, "")
	w.num("/budget", "remainingUsd", b.RemainingUSD, true)
	w.num("/budget", "reservedUsd", b.ReservedUSD, false)
	w.num("/budget", "maxToolCallsRemaining", b.MaxToolCallsRemaining, false)
	if req.Task != nil {
		w.node("/task", -1, "")
		w.str("/task", -1, "goalHash", req.Task.GoalHash)
	}
	if len(req.History) > 0 {
		w.node("/history", -1, "")
		for i := range req.History {
			h := &req.History[i]
			w.node("/history", i, "")
			w.str("/history", i, "toolCallId", h.ToolCallID)
			w.str("/history", i, "fingerprint", h.Fingerprint)
			w.str("/history", i, "outcome", string(h.Outcome))
			if h.ResultReference != "" {
				w.str("/history", i, "resultReference", h.ResultReference)
			}
			w.node("/history", i, "ageSeconds")
			if h.GoalHash != "" {
				w.str("/history", i, "goalHash", h.GoalHash)
			}
			if w.err != nil {
				return
			}
		}
	}
	if req.Capabilities != nil {
		w.node("/capabilities", -1, "")
		w.node("/capabilities", -1, "canReusePriorResult")
		w.node("/capabilities", -1, "canReduceScope")
	}
	w.num("", "freshnessTtlSeconds", req.FreshnessTTLSeconds, false)
	w.num("", "retryCap", req.RetryCap, false)
	w.num("", "preflightPriceUsd", req.PreflightPriceUSD, false)
}
