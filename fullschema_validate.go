package preflight

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/internal/pattern"
	"github.com/agentpreflight/preflight/strictjson"
)

// fullEvalCost is the work, in units of maxValidationWork, of applying
// one subschema to one value: about 100 ns, where a unit of pattern
// matching (a byte) is a few. With it the worst evaluation within the
// limit (3,000,000 / 8 = 375,000 subschema applications, say an
// exponential anyOf) costs tens of milliseconds, while a payload of
// 10,000 values under a few subschemas each stays far below the limit.
const fullEvalCost = 8

// fullValidator is one evaluation of an instance under a fullDoc.
type fullValidator struct {
	errs  issueList
	base  string // JSON Pointer of the instance
	doc   *fullDoc
	work  int
	over  *Error
	depth int
	quiet int // > 0 while a branch is evaluated for its verdict only
	// mute: failures are not recorded at all (a branch whose failures
	// nobody reads), so no message is built.
	mute   bool
	scope  []*fullResource
	states []pattern.State
}

// fullAnn is what the keywords applied at one instance location
// evaluated, for unevaluatedProperties and unevaluatedItems.
type fullAnn struct {
	props    map[string]struct{}
	allProps bool
	items    int // items below this index were evaluated
	allItems bool
	contains map[int]struct{}
}

func (a *fullAnn) addProp(name string) {
	if a.props == nil {
		a.props = map[string]struct{}{}
	}
	a.props[name] = struct{}{}
}

func (a *fullAnn) merge(b *fullAnn) {
	for k := range b.props {
		a.addProp(k)
	}
	a.allProps = a.allProps || b.allProps
	a.items = max(a.items, b.items)
	a.allItems = a.allItems || b.allItems
	for k := range b.contains {
		if a.contains == nil {
			a.contains = map[int]struct{}{}
		}
		a.contains[k] = struct{}{}
	}
}

// validate appends every failure of v (at JSON Pointer path) to errs and
// returns a limit_exceeded error, and no verdict, when the evaluation
// needs more than maxValidationWork steps or nests deeper than
// maxFullEvalDepth.
func (d *fullDoc) validate(v strictjson.Value, path string, errs *issueList) *Error {
	w := fullValidator{errs: *errs, base: path, doc: d, work: maxValidationWork}
	if d.patterns > 0 {
		w.states = make([]pattern.State, d.patterns)
	}
	w.eval(d.root, v, nil, nil)
	*errs = w.errs
	return w.over
}

func (w *fullValidator) spend(n int) bool {
	if w.over != nil {
		return false
	}
	w.work -= n
	return w.work >= 0
}

func (w *fullValidator) exhausted(at string) {
	if w.over != nil {
		return
	}
	w.work = -1
	w.over = &Error{Code: ErrorLimitExceeded, Message: "the request exceeds a limit",
		Details: []Issue{{Path: at, Code: IssueMaxWork,
			Message: "validating the payload under this keyword needs more than " + strconv.Itoa(maxValidationWork) +
				" steps, the most one call may use; use simpler patterns, fewer alternatives or a smaller value"}}}
}

// schemaPointer is the JSON Pointer of keyword in s, relative to the
// schema document (as the subset's validator names it for a catalog
// schema): a limit error is about the tool's schema, not the call.
func (w *fullValidator) schemaPointer(s *fullSchema, keyword string) string {
	if keyword == "" {
		return s.loc
	}
	return s.loc + "/" + keyword
}

// fail records a failure at f, unless the list is full or the branch
// being evaluated is mute. The message is built only when it is recorded.
func (w *fullValidator) fail(f *frame, code IssueCode, msg func() string) {
	if !w.mute && w.errs.room() {
		w.errs.issues = append(w.errs.issues, Issue{Path: framePointer(w.base, f), Code: code, Message: msg()})
	}
}

// branch evaluates s on v for its verdict, collecting its first failure
// apart from the caller's when keep is set (and the caller's own failures
// are recorded); otherwise no failure message is built at all.
func (w *fullValidator) branch(s *fullSchema, v strictjson.Value, f *frame, ann *fullAnn, keep bool) (bool, []Issue) {
	saved, mute := w.errs, w.mute
	w.errs = issueList{max: 1}
	w.mute = mute || !keep
	w.quiet++
	ok := w.eval(s, v, f, ann)
	w.quiet--
	got := w.errs.issues
	w.errs, w.mute = saved, mute
	return ok, got
}

// eval applies s to v (at f) and reports whether v is valid. When ann is
// not nil, what s evaluated at this location is added to it if v is valid.
func (w *fullValidator) eval(s *fullSchema, v strictjson.Value, f *frame, ann *fullAnn) bool {
	if w.over != nil || w.quiet == 0 && w.errs.truncated {
		return false
	}
	if !w.spend(fullEvalCost) {
		w.exhausted(framePointer(w.base, f))
		return false
	}
	switch s.kind {
	case trueSchema:
		return true
	case falseSchema:
		if !w.mute {
			w.fail(f, IssueFalseSchema, func() string { return "expected no value here (the schema is false), found " + v.Kind().String() })
		}
		return false
	}
	if w.depth >= maxFullEvalDepth {
		if w.over == nil {
			w.over = &Error{Code: ErrorLimitExceeded, Message: "the request exceeds a limit",
				Details: []Issue{{Path: w.schemaPointer(s, ""), Code: IssueMaxDepth,
					Message: "evaluation nests deeper than " + strconv.Itoa(maxFullEvalDepth) +
						" levels here: a reference cycle that never descends into the value"}}}
		}
		return false
	}
	w.depth++
	scoped := s.res != nil && (len(w.scope) == 0 || w.scope[len(w.scope)-1] != s.res)
	if scoped {
		w.scope = append(w.scope, s.res)
	}
	ok := w.evalObject(s, v, f, ann)
	if scoped {
		w.scope = w.scope[:len(w.scope)-1]
	}
	w.depth--
	return ok
}

// evalObject is eval for an object schema, once the step is paid for.
func (w *fullValidator) evalObject(s *fullSchema, v strictjson.Value, f *frame, ann *fullAnn) bool {
	var local *fullAnn
	if s.needsAnn || ann != nil {
		local = &fullAnn{}
	}
	ok := w.inPlace(s, v, f, local)
	if !ok && w.quiet > 0 && local == nil {
		return false
	}
	ok = w.assertions(s, v, f) && ok
	switch v.Kind() {
	case strictjson.Object:
		ok = w.object(s, v, f, local) && ok
	case strictjson.Array:
		ok = w.array(s, v, f, local) && ok
	}
	if ok && ann != nil {
		// Merging costs a step per name or index it copies.
		if !w.spend(len(local.props) + len(local.contains)) {
			w.exhausted(framePointer(w.base, f))
			return false
		}
		ann.merge(local)
	}
	return ok
}

// inPlace applies the keywords that apply subschemas to v itself.
func (w *fullValidator) inPlace(s *fullSchema, v strictjson.Value, f *frame, local *fullAnn) bool {
	ok := true
	if s.ref != nil {
		ok = w.eval(s.ref, v, f, local) && ok
	}
	if s.dynRef != nil {
		ok = w.eval(w.dynamicTarget(s), v, f, local) && ok
	}
	for _, sub := range s.allOf {
		ok = w.eval(sub, v, f, local) && ok
	}
	if len(s.anyOf) > 0 {
		ok = w.anyOf(s, v, f, local) && ok
	}
	if len(s.oneOf) > 0 {
		ok = w.oneOf(s, v, f, local) && ok
	}
	if s.not != nil {
		if good, _ := w.branch(s.not, v, f, nil, false); good {
			w.fail(f, "not", func() string {
				return "expected a value that does not match the schema at " + w.schemaPointer(s, "not") + ", found one that does"
			})
			ok = false
		}
	}
	if s.ifS != nil {
		if good, _ := w.branch(s.ifS, v, f, local, false); good {
			if s.thenS != nil {
				ok = w.eval(s.thenS, v, f, local) && ok
			}
		} else if s.elseS != nil {
			ok = w.eval(s.elseS, v, f, local) && ok
		}
	}
	for _, d := range s.depSchemas {
		if v.Kind() != strictjson.Object {
			break
		}
		if _, has := v.Get(d.name); has {
			ok = w.eval(d.schema, v, f, local) && ok
		}
	}
	return ok
}

// dynamicTarget resolves a $dynamicRef: to the outermost resource of the
// dynamic scope that has a $dynamicAnchor of the name, when the static
// target has one.
func (w *fullValidator) dynamicTarget(s *fullSchema) *fullSchema {
	if s.dynName == "" {
		return s.dynRef
	}
	for _, r := range w.scope {
		if ptr, ok := r.dynAnchors[s.dynName]; ok {
			if n := w.doc.nodes[ptr]; n != nil {
				return n
			}
		}
	}
	return s.dynRef
}

// summary is a brief account of why the branches of anyOf or oneOf failed.
func (w *fullValidator) summary(fails [][]Issue) string {
	b := make([]byte, 0, 128)
	for i, is := range fails {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = append(b, '#')
		b = strconv.AppendInt(b, int64(i), 10)
		if len(is) == 0 {
			b = append(b, " failed"...)
			continue
		}
		b = append(b, " at "...)
		b = append(b, is[0].Path...)
		b = append(b, ": "...)
		b = append(b, is[0].Message...)
		if len(b) > 600 {
			b = append(b[:600], clip.Mark...)
			break
		}
	}
	return string(b)
}

func (w *fullValidator) anyOf(s *fullSchema, v strictjson.Value, f *frame, local *fullAnn) bool {
	any := false
	var fails [][]Issue
	for _, sub := range s.anyOf {
		good, is := w.branch(sub, v, f, local, w.quiet == 0)
		if good {
			any = true
			if local == nil {
				return true
			}
			continue
		}
		fails = append(fails, is)
	}
	if !any && w.quiet == 0 {
		w.fail(f, "anyOf", func() string {
			return "expected a value matching at least one of the " + strconv.Itoa(len(s.anyOf)) +
				" schemas of anyOf, found none: " + w.summary(fails)
		})
	} else if !any {
		w.fail(f, "anyOf", func() string { return "expected a value matching one of the schemas of anyOf" })
	}
	return any
}

func (w *fullValidator) oneOf(s *fullSchema, v strictjson.Value, f *frame, local *fullAnn) bool {
	var matched []int
	var fails [][]Issue
	var keep *fullAnn
	for i, sub := range s.oneOf {
		var a *fullAnn
		if local != nil {
			a = &fullAnn{}
		}
		good, is := w.branch(sub, v, f, a, w.quiet == 0)
		if good {
			matched = append(matched, i)
			keep = a
			if len(matched) > 1 && local == nil {
				break
			}
			continue
		}
		fails = append(fails, is)
	}
	switch {
	case len(matched) == 1:
		if local != nil {
			local.merge(keep)
		}
		return true
	case len(matched) == 0:
		msg := "expected a value matching exactly one of the " + strconv.Itoa(len(s.oneOf)) + " schemas of oneOf, found none"
		if w.quiet == 0 {
			msg += ": " + w.summary(fails)
		}
		w.fail(f, "oneOf", func() string { return msg })
	default:
		w.fail(f, "oneOf", func() string {
			return "expected a value matching exactly one of the " + strconv.Itoa(len(s.oneOf)) +
				" schemas of oneOf, found one matching #" + strconv.Itoa(matched[0]) + " and #" + strconv.Itoa(matched[1])
		})
	}
	return false
}

// assertions applies the keywords that test v itself.
func (w *fullValidator) assertions(s *fullSchema, v strictjson.Value, f *frame) bool {
	ok := true
	kind := v.Kind()
	if s.types != 0 && !s.types.matchesKind(kind, v) {
		var buf [128]byte
		tmp := schema{types: s.types, typeValue: s.typeValue}
		b := tmp.appendTypePhrase(append(buf[:0], "expected "...))
		b = tmp.appendFoundType(append(b, ", found "...), v)
		w.fail(f, IssueType, func() string { return string(b) })
		ok = false
	}
	if s.enum.IsValid() {
		if !w.spend(s.enum.Len()) {
			w.exhausted(w.schemaPointer(s, "enum"))
			return false
		}
		found := false
		for it := s.enum.Iter(); it.Next() && !found; {
			found = schemaEqual(it.Value(), v)
		}
		if !found {
			w.fail(f, IssueEnum, func() string { return "expected one of " + echoJSON(s.enum) + ", found " + echoJSON(v) })
			ok = false
		}
	}
	if s.hasConst && !schemaEqual(s.constant, v) {
		w.fail(f, IssueConst, func() string { return "expected " + echoJSON(s.constant) + ", found " + echoJSON(v) })
		ok = false
	}
	switch kind {
	case strictjson.Number:
		ok = w.number(s, v.Str(), f) && ok
	case strictjson.String:
		ok = w.str(s, v.Str(), f) && ok
	}
	return ok
}

func (w *fullValidator) number(s *fullSchema, n string, f *frame) bool {
	if s.minimum == nil && s.maximum == nil && s.exclMin == nil && s.exclMax == nil && s.multipleOf == "" {
		return true
	}
	ok := true
	x := decimal.ParseNumber(n)
	check := func(bound *decimal.Number, bad func(int) bool, code IssueCode, words string) {
		if bound != nil && bad(bound.Cmp(x)) {
			w.fail(f, code, func() string {
				return "expected " + words + " " + clip.String(bound.Text()) + ", found " + clip.String(n)
			})
			ok = false
		}
	}
	check(s.minimum, func(c int) bool { return c > 0 }, IssueMinimum, "at least")
	check(s.maximum, func(c int) bool { return c < 0 }, IssueMaximum, "at most")
	check(s.exclMin, func(c int) bool { return c >= 0 }, "exclusiveMinimum", "more than")
	check(s.exclMax, func(c int) bool { return c <= 0 }, "exclusiveMaximum", "less than")
	if s.multipleOf != "" {
		if !w.spend(len(n) + len(s.multipleOf)) {
			w.exhausted(w.schemaPointer(s, "multipleOf"))
			return false
		}
		if !decimal.MultipleOf(n, s.multipleOf) {
			w.fail(f, "multipleOf", func() string {
				return "expected a multiple of " + clip.String(s.multipleOf) + ", found " + clip.String(n)
			})
			ok = false
		}
	}
	return ok
}

func (w *fullValidator) str(s *fullSchema, text string, f *frame) bool {
	ok := true
	if s.minLength >= 0 || s.maxLength >= 0 {
		n := utf8.RuneCountInString(text)
		if s.minLength >= 0 && n < s.minLength {
			limit := strconv.Itoa(s.minLength)
			w.fail(f, IssueMinLength, func() string { return string(appendLengthMessage(nil, "expected at least ", limit, n)) })
			ok = false
		}
		if s.maxLength >= 0 && n > s.maxLength {
			limit := strconv.Itoa(s.maxLength)
			w.fail(f, IssueMaxLength, func() string { return string(appendLengthMessage(nil, "expected at most ", limit, n)) })
			ok = false
		}
	}
	if s.formatCheck != nil {
		if !w.spend(len(text)) {
			w.exhausted(w.schemaPointer(s, "format"))
			return false
		}
		valid := false
		if s.format == "regex" {
			// Compiling a pattern costs in its character-class ranges:
			// charged like matching, within what is left.
			var good bool
			if valid, good = w.regexFormat(text); !good {
				w.exhausted(w.schemaPointer(s, "format"))
				return false
			}
		} else {
			valid = s.formatCheck(text)
		}
		if !valid {
			w.fail(f, "format", func() string {
				return "expected a value in format " + echoQuote(s.format) + ", found " + echoQuote(text)
			})
			ok = false
		}
	}
	if s.pattern != nil {
		matched, good := w.match(s.pattern, s.patternIndex, text, s, "pattern")
		if !good {
			return false
		}
		if !matched {
			w.fail(f, IssuePattern, func() string {
				return "expected a value matching pattern " + echoQuote(s.pattern.String()) + ", found " + echoQuote(text)
			})
			ok = false
		}
	}
	return ok
}

// match runs a pattern within the work left; good is false when the work
// ran out (the error is recorded).
func (w *fullValidator) match(re *pattern.Pattern, index int, text string, s *fullSchema, keyword string) (matched, good bool) {
	if w.over != nil {
		return false, false
	}
	var m, ok bool
	var spent int
	if w.doc.shared {
		// The same answer and count as MatchBudget, from a kept matcher.
		m, spent, ok = re.MatchBudgetShared(&w.states[index], text, max(w.work, 0))
	} else {
		m, spent, ok = re.MatchBudget(&w.states[index], text, max(w.work, 0))
	}
	w.work -= spent
	if !ok {
		w.exhausted(w.schemaPointer(s, keyword))
		return false, false
	}
	return m, true
}

func (w *fullValidator) array(s *fullSchema, v strictjson.Value, f *frame, local *fullAnn) bool {
	ok := true
	n := v.Len()
	if s.minItems >= 0 && n < s.minItems {
		w.fail(f, "minItems", func() string {
			return "expected at least " + strconv.Itoa(s.minItems) + " items, found " + strconv.Itoa(n)
		})
		ok = false
	}
	if s.maxItems >= 0 && n > s.maxItems {
		w.fail(f, "maxItems", func() string {
			return "expected at most " + strconv.Itoa(s.maxItems) + " items, found " + strconv.Itoa(n)
		})
		ok = false
	}
	if s.uniqueItems && n > 1 {
		// Each pair compared costs a step per value of the smaller item at
		// most: charge the pairs times the items' mean size.
		if !w.spend(n * (n - 1) / 2 * (1 + nodeCount(v, maxValidationWork)/n)) {
			w.exhausted(w.schemaPointer(s, "uniqueItems"))
			return false
		}
		items := make([]strictjson.Value, 0, n)
		for it := v.Iter(); it.Next(); {
			items = append(items, it.Value())
		}
	outer:
		for i := range items {
			for j := i + 1; j < len(items); j++ {
				if schemaEqual(items[i], items[j]) {
					w.fail(f, "uniqueItems", func() string {
						return "expected unique items, found item " + strconv.Itoa(j) + " equal to item " + strconv.Itoa(i)
					})
					ok = false
					break outer
				}
			}
		}
	}
	if len(s.prefix) == 0 && s.items == nil && s.contains == nil && s.unevalItems == nil && local == nil {
		return ok
	}
	item := frame{up: f}
	matches := 0
	for it := v.Iter(); it.Next(); {
		i := it.Index()
		item.index = i
		switch {
		case i < len(s.prefix):
			ok = w.eval(s.prefix[i], it.Value(), &item, nil) && ok
		case s.items != nil:
			if s.items.kind == falseSchema {
				code := IssueCode("items")
				if s.dialect != dialect2020 {
					code = "additionalItems"
				}
				w.fail(&item, code, func() string {
					return "expected at most " + strconv.Itoa(len(s.prefix)) + " items, found " + strconv.Itoa(n)
				})
				ok = false
			} else {
				ok = w.eval(s.items, it.Value(), &item, nil) && ok
			}
		}
		if s.contains != nil {
			if good, _ := w.branch(s.contains, it.Value(), &item, nil, false); good {
				matches++
				if local != nil {
					if local.contains == nil {
						local.contains = map[int]struct{}{}
					}
					local.contains[i] = struct{}{}
				}
			}
		}
		if !ok && w.quiet > 0 && local == nil && s.contains == nil {
			return false
		}
		if i >= len(s.prefix) && s.items != nil && s.items.kind == falseSchema && s.contains == nil {
			break // one failure says it all
		}
	}
	if local != nil {
		if s.items != nil {
			local.allItems = true
		}
		local.items = max(local.items, min(len(s.prefix), n))
	}
	if s.contains != nil {
		if matches < s.minContains {
			code, words := IssueCode("contains"), "at least "+strconv.Itoa(s.minContains)
			if s.minContains != 1 {
				code = "minContains"
			}
			w.fail(f, code, func() string { return "expected " + words + " items matching contains, found " + strconv.Itoa(matches) })
			ok = false
		}
		if s.maxContains >= 0 && matches > s.maxContains {
			w.fail(f, "maxContains", func() string {
				return "expected at most " + strconv.Itoa(s.maxContains) + " items matching contains, found " + strconv.Itoa(matches)
			})
			ok = false
		}
	}
	if s.unevalItems != nil && !local.allItems {
		for it := v.Iter(); it.Next(); {
			i := it.Index()
			if _, seen := local.contains[i]; i < local.items || seen {
				continue
			}
			item.index = i
			if s.unevalItems.kind == falseSchema {
				w.fail(&item, "unevaluatedItems", func() string {
					return "item " + strconv.Itoa(i) + " is not allowed: no keyword evaluates it and unevaluatedItems is false"
				})
				ok = false
				continue
			}
			ok = w.eval(s.unevalItems, it.Value(), &item, nil) && ok
		}
		local.allItems = true
	}
	return ok
}

func (w *fullValidator) object(s *fullSchema, v strictjson.Value, f *frame, local *fullAnn) bool {
	ok := true
	n := v.Len()
	// A step per member for the keywords that visit the members, and per
	// name that required and dependentRequired look up.
	if !w.spend(n + len(s.required) + len(s.depRequired)) {
		w.exhausted(framePointer(w.base, f))
		return false
	}
	if s.minProps >= 0 && n < s.minProps {
		w.fail(f, "minProperties", func() string {
			return "expected at least " + strconv.Itoa(s.minProps) + " properties, found " + strconv.Itoa(n)
		})
		ok = false
	}
	if s.maxProps >= 0 && n > s.maxProps {
		w.fail(f, "maxProperties", func() string {
			return "expected at most " + strconv.Itoa(s.maxProps) + " properties, found " + strconv.Itoa(n)
		})
		ok = false
	}
	for _, name := range s.required {
		if _, has := v.Get(name); !has {
			w.fail(&frame{up: f, name: name, index: -1}, IssueRequired, func() string { return "missing required property " + echoQuote(name) })
			ok = false
		}
	}
	for _, d := range s.depRequired {
		if _, has := v.Get(d.name); !has {
			continue
		}
		for _, name := range d.required {
			if _, has := v.Get(name); !has {
				w.fail(&frame{up: f, name: name, index: -1}, "dependentRequired", func() string {
					return "missing property " + echoQuote(name) + ", required when " + echoQuote(d.name) + " is present"
				})
				ok = false
			}
		}
	}
	member := frame{up: f, index: -1}
	if len(s.props) > 0 || len(s.patProps) > 0 || s.additional != nil || s.propNames != nil {
		for it := v.Iter(); it.Next(); {
			key, val := it.Key(), it.Value()
			member.name = key
			matched := false
			if p := s.property(key); p != nil {
				matched = true
				ok = w.eval(p, val, &member, nil) && ok
			}
			for _, pp := range s.patProps {
				hit, good := w.match(pp.re, pp.index, key, s, "patternProperties")
				if !good {
					return false
				}
				if hit {
					matched = true
					ok = w.eval(pp.schema, val, &member, nil) && ok
				}
			}
			if !matched && s.additional != nil {
				if s.additional.kind == falseSchema {
					w.fail(&member, IssueAdditionalProperties, func() string { return "property " + echoQuote(key) + " is not allowed" })
					ok = false
				} else {
					ok = w.eval(s.additional, val, &member, nil) && ok
				}
				matched = true
			}
			if matched && local != nil {
				local.addProp(key)
			}
			if s.propNames != nil {
				ok = w.propertyName(s, key, f) && ok
			}
			if !ok && w.quiet > 0 && local == nil {
				return false
			}
		}
	}
	if s.unevalProps != nil && !local.allProps {
		for it := v.Iter(); it.Next(); {
			key := it.Key()
			if _, seen := local.props[key]; seen {
				continue
			}
			member.name = key
			if s.unevalProps.kind == falseSchema {
				w.fail(&member, "unevaluatedProperties", func() string {
					return "property " + echoQuote(key) + " is not allowed: no keyword evaluates it and unevaluatedProperties is false"
				})
				ok = false
				continue
			}
			ok = w.eval(s.unevalProps, it.Value(), &member, nil) && ok
		}
		local.allProps = true
	}
	return ok
}

// propertyName applies propertyNames to one member name of the object at f.
func (w *fullValidator) propertyName(s *fullSchema, key string, f *frame) bool {
	if !w.spend(fullEvalCost + len(key)) { // the name is parsed as a value
		w.exhausted(w.schemaPointer(s, "propertyNames"))
		return false
	}
	text, _ := json.Marshal(key)
	kv, err := strictjson.Parse(text, strictjson.Limits{})
	if err != nil {
		return true // a parsed name always re-parses
	}
	good, is := w.branch(s.propNames, kv, f, nil, w.quiet == 0)
	if !good {
		why := "it does not"
		if len(is) > 0 {
			why = is[0].Message
		}
		w.fail(&frame{up: f, name: key, index: -1}, "propertyNames", func() string {
			return "expected property names matching propertyNames, found " + echoQuote(key) + ": " + why
		})
	}
	return good
}

// nodeCount counts the values of v, stopping once it passes limit.
func nodeCount(v strictjson.Value, limit int) int {
	n := 1
	switch v.Kind() {
	case strictjson.Array, strictjson.Object:
		for it := v.Iter(); it.Next() && n <= limit; {
			n += nodeCount(it.Value(), limit-n)
		}
	}
	return n
}

// property returns the schema of the properties member named name, or nil.
func (s *fullSchema) property(name string) *fullSchema {
	if s.propIndex != nil {
		if i, ok := s.propIndex[name]; ok {
			return s.props[i].schema
		}
		return nil
	}
	for i := range s.props {
		if s.props[i].name == name {
			return s.props[i].schema
		}
	}
	return nil
}

// regexFormatRangeCost is the work of one character-class range when a
// string is compiled to check format "regex" (about 80 ns a range).
const regexFormatRangeCost = 8

// regexFormat checks format "regex" on text within the work left: good is
// false when compiling it needs more.
func (w *fullValidator) regexFormat(text string) (valid, good bool) {
	room := max(w.work, 0) / regexFormatRangeCost
	_, size, ranges, err := pattern.CompileWithin(text, maxPatternInsts, min(maxSchemaClassRanges, room))
	if !w.spend(size + ranges*regexFormatRangeCost) {
		return false, false
	}
	if err == nil {
		return true, true
	}
	pe, ok := err.(*pattern.Error)
	if ok && pe.OverRanges && room < maxSchemaClassRanges {
		return false, false
	}
	return ok && (pe.Unsupported || pe.OverSize || pe.OverRanges || pe.TooDeep), true
}
