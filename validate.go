package preflight

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/internal/pattern"
	"github.com/agentpreflight/preflight/strictjson"
)

// maxValidationWork bounds the work of one validation: the instance
// values it visits, the enum members it compares, and the work of pattern
// matching as the matcher counts it (pattern.Pattern.MatchBudget: one unit
// per byte of the string, plus one per program instruction visited while a
// new matcher state is built). The bound keeps the matching cost of any
// request within the body and schema limits to tens of milliseconds of CPU
// whatever the pattern; an ordinary schema uses a small fraction of it (a
// 60,000-character string under ^[a-z0-9._-]+@[a-z0-9.-]+$ takes about
// 60,000). Validation that reaches it stops and the request is refused with
// limit_exceeded (detail max_work), never half-validated.
const maxValidationWork = 3_000_000

// validator is one walk of an instance under a compiled schema.
type validator struct {
	errs issueList // copied in and out, so that the caller's list does not escape
	base string    // the JSON Pointer of the instance
	work int       // what is left of maxValidationWork
	over *Error    // set when the work ran out; the walk then stops

	root       *schema // the schema validated against, and its JSON Pointer,
	schemaBase string  // to name a keyword in a limit error

	// states and more hold what matching has built for each pattern of
	// the document during this walk, by patternIndex: the first few in
	// states, the rest in more. Each walk starts without any, so the work
	// a text costs never depends on what earlier validations matched: the
	// same request always gets the same answer.
	states [4]pattern.State
	more   []pattern.State

	// items[d] holds what object learnt from the names of the last item
	// of the array being walked at array depth d (the first len(items)
	// depths), for the next item should it repeat them. itemAt is the
	// depth of the array whose item is being walked, until object takes
	// it; -1 when there is none.
	items  [2]itemNames
	depth  int
	itemAt int

	// texts holds the text of the walk's issues (see issue).
	texts strings.Builder
}

// itemNames is what object learnt from the member names of an item of an
// array: under schema s, member k of an item with those names is walked
// under subs[k] (skipped when nil) with the name names[k], and the
// required names present are present. It holds for an item with the same
// names in the same order (strictjson.Value.RepeatsNames), whatever its
// values, so such an item needs no property lookups: the schemas are a
// tree, so no object but an item of that array is validated under s.
type itemNames struct {
	s       *schema // nil: nothing learnt
	present uint64
	names   [maxItemNames]string
	subs    [maxItemNames]*schema
}

// maxItemNames is the most members an item may have for object to keep
// what it learnt from their names.
const maxItemNames = 16

// validate appends every failure of the instance v (found at JSON Pointer
// path) to errs, in walk order. It allocates only for failures it records
// and stops walking once errs is full. It returns a limit_exceeded error,
// and no verdict, when the walk needs more than maxValidationWork.
func (s *schema) validate(v strictjson.Value, path string, errs *issueList) *Error {
	return s.validateAt(v, path, errs, "")
}

// validateAt is validate for a schema found at JSON Pointer schemaBase in
// the request, which names the keyword in a limit error.
func (s *schema) validateAt(v strictjson.Value, path string, errs *issueList, schemaBase string) *Error {
	w := validator{errs: *errs, base: path, work: maxValidationWork, root: s, schemaBase: schemaBase, itemAt: -1}
	w.walk(s, v, nil)
	*errs = w.errs
	return w.over
}

// spend takes n units of work and reports whether they were there; the
// caller records where the work ran out (exhausted) when they were not.
func (w *validator) spend(n int) bool {
	if w.over != nil {
		return false
	}
	w.work -= n
	return w.work >= 0
}

// keywordPointer is the JSON Pointer of keyword in the subschema s.
func (w *validator) keywordPointer(s *schema, keyword string) string {
	b, _ := w.root.pointerTo([]byte(w.schemaBase), s)
	return string(append(append(b, '/'), keyword...))
}

// exhausted records that the work ran out at the JSON Pointer at: the
// schema keyword (pattern, enum) that needed it, or the instance value the
// walk had reached.
func (w *validator) exhausted(at string) {
	if w.over != nil {
		return
	}
	w.work = -1
	w.over = &Error{Code: ErrorLimitExceeded, Message: "the request exceeds a limit",
		Details: []Issue{{Path: at, Code: IssueMaxWork,
			Message: "validating the body under this keyword needs more than " + strconv.Itoa(maxValidationWork) +
				" steps, the most one request may use; use a simpler pattern, a smaller enum or a shorter value"}}}
}

// fail records a failure at f. Callers check w.errs.room() first, so that
// no message is built for a failure that will be dropped.
func (w *validator) fail(f *frame, code IssueCode, msg string) { w.failParts(f, code, msg, nil) }

// failBytes is fail for a message built in a buffer.
func (w *validator) failBytes(f *frame, code IssueCode, msg []byte) { w.failParts(f, code, "", msg) }

// failParts records a failure whose message is text followed by more. The
// texts of a walk's failures share the walk's buffer (see issue), so that
// a few failures cost one allocation for their text.
func (w *validator) failParts(f *frame, code IssueCode, text string, more []byte) {
	if w.errs.issues == nil {
		w.errs.issues = make([]Issue, 0, 4) // most invalid bodies have a few failures
	}
	w.errs.issues = append(w.errs.issues, w.issue(f, code, text, more))
}

// issue builds the Issue of a failure at f whose message is text followed
// by more; its path and message are written one after the other into
// w.texts, and are substrings of it. (A strings.Builder only ever appends:
// what its String returned stays as it was.)
func (w *validator) issue(f *frame, code IssueCode, text string, more []byte) Issue {
	var buf [384]byte
	b := appendFramePointer(buf[:0], w.base, f)
	n := len(b)
	b = append(append(b, text...), more...)
	if w.texts.Cap()-w.texts.Len() < len(b) {
		// A new buffer when this one is full; the old one stays with the
		// issues that point into it.
		w.texts = strings.Builder{}
		w.texts.Grow(max(2*len(b), issueTextRoom))
	}
	start := w.texts.Len()
	w.texts.Write(b)
	all := w.texts.String()[start:]
	return Issue{Path: all[:n], Code: code, Message: all[n:]}
}

// issueTextRoom is the least size of a buffer failures' texts share: two
// or three typical failures.
const issueTextRoom = 256

// walk applies s to v, found at f: type first, then the keywords of v's
// kind. For containers the children come before enum and const; for
// scalars enum and const come before the bounds, lengths and pattern.
func (w *validator) walk(s *schema, v strictjson.Value, f *frame) {
	if w.errs.truncated || w.over != nil {
		return
	}
	if !w.spend(1) {
		w.exhausted(framePointer(w.base, f))
		return
	}
	switch s.kind {
	case trueSchema:
		return
	case falseSchema:
		if w.errs.room() {
			w.fail(f, IssueFalseSchema, "expected no value here (the schema is false), found "+v.Kind().String())
		}
		return
	}
	kind := v.Kind()
	if s.types != 0 && !s.types.matchesKind(kind, v) && w.errs.room() {
		var buf [128]byte
		b := s.appendTypePhrase(append(buf[:0], "expected "...))
		b = s.appendFoundType(append(b, ", found "...), v)
		w.failBytes(f, IssueType, b)
	}
	enumConst := s.has&(hasEnum|hasConst) != 0
	switch kind {
	case strictjson.Object:
		w.object(s, v, f)
	case strictjson.Array:
		if s.items != nil && s.items.kind != trueSchema {
			w.array(s.items, v, f)
		}
	case strictjson.Number:
		if enumConst {
			w.enumConst(s, v, f)
			enumConst = false
		}
		if s.has&(hasMinimum|hasMaximum) != 0 {
			w.bounds(s, v.Str(), f)
		}
	case strictjson.String:
		if enumConst {
			w.enumConst(s, v, f)
			enumConst = false
		}
		if s.has&(hasMinLength|hasMaxLength) != 0 || s.pattern != nil {
			w.str(s, v.Str(), f)
		}
	}
	if enumConst {
		w.enumConst(s, v, f)
	}
}

// enumConst applies enum and const to v.
func (w *validator) enumConst(s *schema, v strictjson.Value, f *frame) {
	if s.enum.IsValid() && (v.Kind() != strictjson.String || len(s.enumStrs) <= schemaLinearScan) && !w.spend(s.enum.Len()) {
		w.exhausted(w.keywordPointer(s, "enum"))
		return
	}
	if s.enum.IsValid() && !s.enumContains(v) && w.errs.room() {
		var buf [256]byte
		if m := s.enumMessage(w.root.shared); m != nil {
			w.failParts(f, IssueEnum, *m, appendEchoJSON(buf[:0], v))
		} else {
			b := append(buf[:0], "expected one of "...)
			b = append(appendEchoJSON(b, s.enum), ", found "...)
			w.failBytes(f, IssueEnum, appendEchoJSON(b, v))
		}
	}
	if s.has&hasConst != 0 && !schemaEqual(s.constant, v) && w.errs.room() {
		var buf [256]byte
		b := append(buf[:0], "expected "...)
		b = appendEchoJSON(b, s.constant)
		b = append(b, ", found "...)
		w.failBytes(f, IssueConst, appendEchoJSON(b, v))
	}
}

// enumMessage returns "expected one of E, found ", E being s's enum as
// failure messages echo it, as kept in s; when s has not kept it yet,
// it keeps it first if keep is set (s is part of a schema in the cache,
// which meets many bodies), and otherwise returns nil.
func (s *schema) enumMessage(keep bool) *string {
	if m := s.enumEcho.Load(); m != nil || !keep {
		return m
	}
	var buf [256]byte
	b := append(buf[:0], "expected one of "...)
	m := string(append(appendEchoJSON(b, s.enum), ", found "...))
	s.enumEcho.Store(&m) // another failure may store the same text meanwhile
	return &m
}

// bounds applies minimum and maximum to the number text n.
func (w *validator) bounds(s *schema, n string, f *frame) {
	lim, negative := s.bounds, n[0] == '-' // -0 too: as 0 it meets a maximum of at least 0 all the same
	checkMin := s.has&hasMinimum != 0 && !(lim.minNotPositive && !negative)
	checkMax := s.has&hasMaximum != 0 && !(lim.maxNotNegative && negative)
	if !checkMin && !checkMax {
		return
	}
	x := decimal.ParseNumber(n)
	if checkMin && lim.minNum.Cmp(x) > 0 && w.errs.room() {
		var buf [192]byte
		b := clip.Append(append(buf[:0], "expected at least "...), lim.minNum.Text())
		w.failBytes(f, IssueMinimum, clip.Append(append(b, ", found "...), n))
	}
	if checkMax && lim.maxNum.Cmp(x) < 0 && w.errs.room() {
		var buf [192]byte
		b := clip.Append(append(buf[:0], "expected at most "...), lim.maxNum.Text())
		w.failBytes(f, IssueMaximum, clip.Append(append(b, ", found "...), n))
	}
}

// str applies minLength, maxLength and pattern to the string text.
func (w *validator) str(s *schema, text string, f *frame) {
	if s.has&(hasMinLength|hasMaxLength) != 0 {
		// Bytes bound code points from above, so a short string needs no
		// counting for maxLength alone.
		n := len(text)
		if s.has&hasMinLength != 0 || n > int(s.maxLength) {
			n = utf8.RuneCountInString(text)
		}
		if s.has&hasMinLength != 0 && n < int(s.minLength) && w.errs.room() {
			var buf [128]byte
			w.failBytes(f, IssueMinLength, appendLengthMessage(buf[:0], "expected at least ", s.bounds.minLenText.Str(), n))
		}
		if s.has&hasMaxLength != 0 && n > int(s.maxLength) && w.errs.room() {
			var buf [128]byte
			w.failBytes(f, IssueMaxLength, appendLengthMessage(buf[:0], "expected at most ", s.bounds.maxLenText.Str(), n))
		}
	}
	if s.pattern == nil || w.over != nil {
		return
	}
	var matched, ok bool
	var spent int
	if w.root.shared {
		// The same answer and count as MatchBudget, from a kept matcher.
		matched, spent, ok = s.pattern.MatchBudgetShared(w.state(s.patternIndex), text, max(w.work, 0))
	} else {
		matched, spent, ok = s.pattern.MatchBudget(w.state(s.patternIndex), text, max(w.work, 0))
	}
	w.work -= spent
	if !ok {
		w.exhausted(w.keywordPointer(s, "pattern"))
		return
	}
	if !matched && w.errs.room() {
		var buf [192]byte
		b := appendEchoQuote(append(buf[:0], "expected a value matching pattern "...), s.pattern.String())
		w.failBytes(f, IssuePattern, appendEchoQuote(append(b, ", found "...), text))
	}
}

// state returns the walk's matcher state for the pattern numbered i.
func (w *validator) state(i int32) *pattern.State {
	if int(i) < len(w.states) {
		return &w.states[i]
	}
	j := int(i) - len(w.states)
	if j >= len(w.more) {
		w.more = append(w.more, make([]pattern.State, j+1-len(w.more))...)
	}
	return &w.more[j]
}

// array walks the items of the array v (at f) under the schema items.
func (w *validator) array(items *schema, v strictjson.Value, f *frame) {
	d := w.depth
	w.depth++
	if d < len(w.items) {
		// What was learnt from another array's items (the first item
		// would set it aside too: it never repeats names).
		w.items[d].s = nil
	}
	item := frame{up: f}
	for it := v.Iter(); it.Next(); {
		item.index = it.Index()
		w.itemAt = d
		w.walk(items, it.Value(), &item)
	}
	w.itemAt = -1
	w.depth--
}

// object applies required, properties and additionalProperties to the
// object v (at f) in one pass over its members, walking each, in instance
// order, under its property schema or else additionalProperties. The
// failures of required are reported before those of the members: they are
// inserted ahead of them once the pass has seen which names are present.
func (w *validator) object(s *schema, v strictjson.Value, f *frame) {
	var learn *itemNames // where to keep what the names teach, if anywhere
	if d := w.itemAt; d >= 0 && d < len(w.items) {
		w.itemAt = -1 // for v, not for the objects in it
		learn = &w.items[d]
		if learn.s == s && v.RepeatsNames() {
			w.repeatedNames(s, v, f, learn)
			return
		}
		learn.s = nil
		if v.Len() > maxItemNames {
			learn = nil
		}
	}
	additional := s.additional
	if additional != nil && additional.kind == trueSchema {
		additional = nil
	}
	if len(s.required) == 0 && len(s.props) == 0 && additional == nil {
		return
	}
	mark := len(w.errs.issues)
	fewRequired := s.fewRequired()
	var present uint64 // bit j: required name j is a member (when fewRequired)
	member := frame{up: f, index: -1}
	for it := v.Iter(); it.Next(); {
		key := it.Key()
		var sub *schema
		if p := s.propertyEntry(key); p != nil {
			sub, present = p.schema, present|p.required
		} else if fewRequired && s.requiredElsewhere {
			for j, name := range s.required {
				if name == key {
					present |= 1 << j
					break
				}
			}
		}
		member.name = key
		switch {
		case sub != nil:
		case additional == nil:
		case additional.kind == falseSchema:
			if w.errs.room() {
				var buf [96]byte
				b := appendEchoQuote(append(buf[:0], "property "...), key)
				w.failBytes(&member, IssueAdditionalProperties, append(b, " is not allowed"...))
			}
			learn = nil // the next item would have to fail the same way
		default:
			sub = additional
		}
		if learn != nil {
			k := it.Index()
			learn.names[k], learn.subs[k] = key, sub
		}
		if sub != nil {
			w.walk(sub, it.Value(), &member)
		}
	}
	w.missing(s, v, f, mark, present)
	if learn != nil {
		learn.s, learn.present = s, present
	}
}

// repeatedNames is object for an item v whose names are those of the item
// before it, from which learnt was learnt under s.
func (w *validator) repeatedNames(s *schema, v strictjson.Value, f *frame, learnt *itemNames) {
	mark := len(w.errs.issues)
	member := frame{up: f, index: -1}
	for it := v.Iter(); it.Next(); {
		k := it.Index()
		if sub := learnt.subs[k]; sub != nil {
			member.name = learnt.names[k]
			w.walk(sub, it.Value(), &member)
		}
	}
	w.missing(s, v, f, mark, learnt.present)
}

// missing reports the required names v (at f) lacks, inserting the
// failures at position mark of the list (ahead of the failures of v's
// members) and keeping the list within its cap. present has bit j set for
// each required name j that v has, when s.fewRequired(); otherwise missing
// looks the names up in v.
func (w *validator) missing(s *schema, v strictjson.Value, f *frame, mark int, present uint64) {
	n, fewRequired := len(s.required), s.fewRequired()
	if n == 0 || fewRequired && present == ^uint64(0)>>(64-n) {
		return // every required name is there: nothing to look at
	}
	l := &w.errs
	end := len(l.issues)
	for j, name := range s.required {
		if fewRequired {
			if present&(1<<j) != 0 {
				continue
			}
		} else if _, ok := v.Get(name); ok {
			continue
		}
		if l.max > 0 && mark+len(l.issues)-end >= l.max {
			l.truncated = true // no room even ahead of the members' failures
			break
		}
		at := frame{up: f, name: name, index: -1}
		var buf [96]byte
		msg := appendEchoQuote(append(buf[:0], "missing required property "...), name)
		l.issues = append(l.issues, w.issue(&at, IssueRequired, "", msg))
	}
	if len(l.issues) == end {
		return
	}
	// Rotate the new failures from the end to position mark.
	rotate(l.issues[mark:], end-mark)
	if l.max > 0 && len(l.issues) > l.max {
		l.issues = l.issues[:l.max]
		l.truncated = true
	}
}

// rotate moves the first k issues of s to its end, keeping both parts in
// order.
func rotate(s []Issue, k int) {
	slices.Reverse(s[:k])
	slices.Reverse(s[k:])
	slices.Reverse(s)
}

// appendLengthMessage appends the words of a minLength or maxLength
// failure: the limit as the schema wrote it, and the length found.
func appendLengthMessage(dst []byte, expected, limit string, found int) []byte {
	b := clip.Append(append(dst, expected...), limit)
	b = append(b, characters(limit)...)
	b = append(b, ", found "...)
	return strconv.AppendInt(b, int64(found), 10)
}
