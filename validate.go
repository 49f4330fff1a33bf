package preflight

import (
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/internal/jsonv"
)

// validator is one walk of an instance under a compiled schema. It keeps
// the JSON Pointer of the value being visited as a stack of tokens, pushed
// and popped around each child, so that visiting a value that passes costs
// no allocation and no copying of the path.
type validator struct {
	errs issueList // copied in and out, so that the caller's list does not escape
	at   pointer
}

// validate appends every failure of the instance v (found at JSON Pointer
// path) to errs, in walk order. It allocates only for failures it records
// and stops walking once errs is full.
func (s *schema) validate(v jsonv.Value, path string, errs *issueList) {
	stack := tokenStacks.Get().(*[]pointerToken)
	w := validator{errs: *errs, at: pointer{base: path, tokens: (*stack)[:0]}}
	w.walk(s, v)
	*errs = w.errs
	*stack = w.at.tokens[:0]
	tokenStacks.Put(stack)
}

// tokenStacks recycles the pointer-token stacks of walks (the stack is
// stored in the validator, which would make a stack array escape anyway).
var tokenStacks = sync.Pool{New: func() any { s := make([]pointerToken, 0, 16); return &s }}

// fail records a failure at the current pointer. Callers check
// w.errs.room() first, so that no message is built for a failure that will
// be dropped.
func (w *validator) fail(code IssueCode, msg string) { w.errs.record(w.at, code, msg) }

// walk applies s to v: type first, then the keywords of v's kind. For
// containers the children come before enum and const; for scalars enum and
// const come before the bounds, lengths and pattern.
func (w *validator) walk(s *schema, v jsonv.Value) {
	if w.errs.truncated {
		return
	}
	switch s.kind {
	case trueSchema:
		return
	case falseSchema:
		if w.errs.room() {
			w.fail(IssueFalseSchema, "expected no value here (the schema is false), found "+v.Kind().String())
		}
		return
	}
	kind := v.Kind()
	if s.types != 0 && !s.types.matches(v) && w.errs.room() {
		w.fail(IssueType, "expected "+s.typePhrase()+", found "+s.foundType(v))
	}
	switch kind {
	case jsonv.Object:
		w.object(s, v)
		w.enumConst(s, v)
	case jsonv.Array:
		if s.items != nil && s.items.kind != trueSchema {
			depth := len(w.at.tokens)
			for it := v.Iter(); it.Next(); {
				w.at.tokens = append(w.at.tokens[:depth], pointerToken{index: it.Index()})
				w.walk(s.items, it.Value())
			}
			w.at.tokens = w.at.tokens[:depth]
		}
		w.enumConst(s, v)
	case jsonv.Number:
		w.enumConst(s, v)
		if s.has&(hasMinimum|hasMaximum) != 0 {
			w.bounds(s, v.Str())
		}
	case jsonv.String:
		w.enumConst(s, v)
		if s.has&(hasMinLength|hasMaxLength) != 0 || s.pattern != nil {
			w.str(s, v.Str())
		}
	default:
		w.enumConst(s, v)
	}
}

// enumConst applies enum and const to v.
func (w *validator) enumConst(s *schema, v jsonv.Value) {
	if s.enum.IsValid() && !s.enumContains(v) && w.errs.room() {
		w.fail(IssueEnum, "expected one of "+echoJSON(s.enum)+", found "+echoJSON(v))
	}
	if s.has&hasConst != 0 && !schemaEqual(s.constant, v) && w.errs.room() {
		w.fail(IssueConst, "expected "+echoJSON(s.constant)+", found "+echoJSON(v))
	}
}

// bounds applies minimum and maximum to the number text n.
func (w *validator) bounds(s *schema, n string) {
	if s.has&hasMinimum != 0 && s.bounds.minNum.CompareTo(n) < 0 && w.errs.room() {
		w.fail(IssueMinimum, "expected at least "+echoClip(s.bounds.minimum.Str())+", found "+echoClip(n))
	}
	if s.has&hasMaximum != 0 && s.bounds.maxNum.CompareTo(n) > 0 && w.errs.room() {
		w.fail(IssueMaximum, "expected at most "+echoClip(s.bounds.maximum.Str())+", found "+echoClip(n))
	}
}

// str applies minLength, maxLength and pattern to the string text.
func (w *validator) str(s *schema, text string) {
	if s.has&(hasMinLength|hasMaxLength) != 0 {
		// Bytes bound code points from above, so a short string needs no
		// counting for maxLength alone.
		n := len(text)
		if s.has&hasMinLength != 0 || n > int(s.maxLength) {
			n = utf8.RuneCountInString(text)
		}
		if s.has&hasMinLength != 0 && n < int(s.minLength) && w.errs.room() {
			w.fail(IssueMinLength, "expected at least "+echoClip(s.minLenText.Str())+characters(s.minLenText.Str())+", found "+strconv.Itoa(n))
		}
		if s.has&hasMaxLength != 0 && n > int(s.maxLength) && w.errs.room() {
			w.fail(IssueMaxLength, "expected at most "+echoClip(s.maxLenText.Str())+characters(s.maxLenText.Str())+", found "+strconv.Itoa(n))
		}
	}
	if s.pattern != nil && !s.pattern.MatchString(text) && w.errs.room() {
		w.fail(IssuePattern, "expected a value matching pattern "+echoQuote(s.pattern.String())+", found "+echoQuote(text))
	}
}

// object applies required, properties and additionalProperties to the
// object v in one pass over its members, walking each, in instance order,
// under its property schema or else additionalProperties. The failures of
// required are reported before those of the members: they are inserted
// ahead of them once the pass has seen which names are present.
func (w *validator) object(s *schema, v jsonv.Value) {
	additional := s.additional
	if additional != nil && additional.kind == trueSchema {
		additional = nil
	}
	if len(s.required) == 0 && len(s.props) == 0 && additional == nil {
		return
	}
	mark := len(w.errs.issues)
	fewRequired := len(s.required) <= 64
	var present uint64 // bit j: required name j is a member (when fewRequired)
	depth := len(w.at.tokens)
	for it := v.Iter(); it.Next(); {
		key := it.Key()
		if fewRequired {
			for j, name := range s.required {
				if name == key {
					present |= 1 << j
					break
				}
			}
		}
		sub := s.property(key)
		switch {
		case sub != nil:
		case additional == nil:
			continue
		case additional.kind == falseSchema:
			if w.errs.room() {
				w.at.tokens = append(w.at.tokens[:depth], pointerToken{name: key, index: -1})
				w.fail(IssueAdditionalProperties, "property "+echoQuote(key)+" is not allowed")
			}
			continue
		default:
			sub = additional
		}
		w.at.tokens = append(w.at.tokens[:depth], pointerToken{name: key, index: -1})
		w.walk(sub, it.Value())
	}
	w.at.tokens = w.at.tokens[:depth]
	if len(s.required) > 0 {
		w.missing(s, v, mark, present, fewRequired)
	}
}

// missing reports the required names v lacks, inserting the failures at
// position mark of the list (ahead of the failures of v's members) and
// keeping the list within its cap.
func (w *validator) missing(s *schema, v jsonv.Value, mark int, present uint64, fewRequired bool) {
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
		l.issues = append(l.issues, Issue{Path: w.at.member(name).String(), Code: IssueRequired,
			Message: "missing required property " + echoQuote(name)})
	}
	added := len(l.issues) - end
	if added == 0 {
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
