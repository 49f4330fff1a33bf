package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight/internal/clip"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/strictjson"
)

// maxNumeric is the cap on every non-negative numeric context value.
const maxNumeric = "1000000000"

// maxFractionDigits bounds the precision of numeric context values so that
// exact arithmetic on them stays cheap.
const maxFractionDigits = 400

// decoder collects every problem found while walking a request document.
type decoder struct {
	issues []Issue
}

func (d *decoder) add(path string, code IssueCode, msg string) {
	d.issues = append(d.issues, Issue{Path: path, Code: code, Message: msg})
}

// err turns the collected issues into an *Error, or nil when there are none.
func (d *decoder) err() *Error {
	if len(d.issues) == 0 {
		return nil
	}
	return issuesError(d.issues)
}

// errorPriority lists the error codes in the order one is chosen for an
// Error whose details are of several kinds. It is the package's only
// error-code priority: every *Error built from issues goes through
// issuesError.
var errorPriority = []struct {
	code  ErrorCode
	kinds []IssueCode
	msg   string
}{
	{ErrorLimitExceeded, []IssueCode{IssueMaxDepth, IssueMaxNodes, IssueMaxWork, IssueMaxHistory}, "the request exceeds a limit"},
	{ErrorSchemaTooLarge, []IssueCode{IssueSchemaTooLarge}, "the schema is larger than 32768 bytes"},
	{ErrorUnsupportedSchemaKeyword, []IssueCode{IssueUnsupportedSchemaKeyword}, "the schema uses a keyword outside the supported subset"},
	{ErrorUnsupportedPattern, []IssueCode{IssueUnsupportedPattern}, "the schema has a pattern that is not an ECMA-262 regular expression (JavaScript, u flag) this validator can run"},
	{ErrorInvalidSchema, []IssueCode{IssueInvalidSchema}, "the schema is not well formed"},
}

func issuesError(issues []Issue) *Error {
	for _, p := range errorPriority {
		for _, is := range issues {
			for _, k := range p.kinds {
				if is.Code == k {
					return &Error{Code: p.code, Message: p.msg, Details: issues}
				}
			}
		}
	}
	msg := "the request breaks an input rule"
	if len(issues) > 1 {
		msg = "the request breaks " + strconv.Itoa(len(issues)) + " input rules"
	}
	return &Error{Code: ErrorInvalidRequest, Message: msg, Details: issues}
}

// parseObject parses a private copy of data within lim and requires an
// object. Only the returned tree reads the copy (see decoded.go). With
// room, the copy's allocation has len(data) bytes more, returned as spare
// (empty, with that capacity) for the request's exported copies of its
// raw texts (copyOut), so that both copies cost one allocation; the tree
// never reads spare. parse is strictjson.Parse, or strictjson.ParseScratch for a
// tree the caller releases before it returns.
func parseObject(data []byte, lim strictjson.Limits, room bool, parse func([]byte, strictjson.Limits) (strictjson.Value, error)) (root strictjson.Value, spare []byte, perr *Error) {
	var private []byte
	if room {
		buf := make([]byte, 2*len(data))
		private, spare = buf[:len(data):len(data)], buf[len(data):len(data)]
		copy(private, data)
	} else {
		private = bytes.Clone(data)
	}
	root, err := parse(private, lim)
	if err != nil {
		return strictjson.Value{}, nil, parseError(err)
	}
	if root.Kind() != strictjson.Object {
		return strictjson.Value{}, nil, &Error{Code: ErrorInvalidRequest, Message: "the request must be a JSON object",
			Details: []Issue{{Path: "", Code: IssueType, Message: "expected an object, found " + kindName(root)}}}
	}
	return root, spare, nil
}

// parseError converts a parser error into the package's *Error.
func parseError(err error) *Error {
	var pe *strictjson.Error
	if !errors.As(err, &pe) {
		return &Error{Code: ErrorInvalidJSON, Message: err.Error()}
	}
	at := " (at byte " + strconv.Itoa(pe.Offset) + ")"
	switch pe.Kind {
	case strictjson.ErrDepth:
		return issuesError([]Issue{{Path: pe.Pointer, Code: IssueMaxDepth, Message: pe.Msg + at}})
	case strictjson.ErrNodes:
		return issuesError([]Issue{{Path: pe.Pointer, Code: IssueMaxNodes, Message: pe.Msg + at}})
	case strictjson.ErrDuplicateKey:
		return &Error{Code: ErrorInvalidJSON, Message: "the body is not valid JSON: duplicate object member name",
			Details: []Issue{{Path: pe.Pointer, Code: IssueDuplicateKey, Message: pe.Msg + at}}}
	case strictjson.ErrInvalidUTF8:
		return &Error{Code: ErrorInvalidJSON, Message: "the body is not valid JSON: invalid UTF-8",
			Details: []Issue{{Path: pe.Pointer, Code: IssueInvalidUTF8, Message: pe.Msg + at}}}
	}
	return &Error{Code: ErrorInvalidJSON, Message: "the body is not valid JSON",
		Details: []Issue{{Path: pe.Pointer, Code: IssueInvalidJSON, Message: pe.Msg + at}}}
}

func kindName(v strictjson.Value) string {
	if v.Kind() == strictjson.Number && decimal.IsInteger(v.Str()) {
		return "integer"
	}
	return v.Kind().String()
}

func child(path, key string) string { return path + "/" + strictjson.EscapePointerToken(key) }

// fields checks that v is an object whose members are all named in names,
// reporting the others as unknown, and in the same pass sets out[i] to the
// member named names[i] (left invalid when absent). It is how every decoder
// reads an object.
func (d *decoder) fields(v strictjson.Value, path string, names []string, out []strictjson.Value) bool {
	return d.members(v, path, names, out, nil)
}

// members is fields, except that with ignored != nil unknown members are
// collected there (as unknown_field_ignored) instead of reported.
func (d *decoder) members(v strictjson.Value, path string, names []string, out []strictjson.Value, ignored *[]Issue) bool {
	if v.Kind() != strictjson.Object {
		d.add(path, IssueType, "expected an object, found "+kindName(v))
		return false
	}
	for it := v.Iter(); it.Next(); {
		k := it.Key()
		known := false
		for i, name := range names {
			if name == k {
				if out != nil {
					out[i] = it.Value()
				}
				known = true
				break
			}
		}
		switch {
		case known:
		case ignored != nil:
			*ignored = append(*ignored, Issue{Path: child(path, k), Code: IssueUnknownFieldIgnored,
				Message: "unknown member " + strconv.Quote(k) + " was ignored"})
		default:
			d.add(child(path, k), IssueUnknownField, "unknown member "+strconv.Quote(k)+"; expected one of "+quoteList(names))
		}
	}
	return true
}

// need reports the required member name of the object at path when v (what
// fields found for it) is absent, and returns v.
func (d *decoder) need(v strictjson.Value, path, name string) strictjson.Value {
	if !v.IsValid() {
		d.add(child(path, name), IssueRequired, "missing required member "+strconv.Quote(name))
	}
	return v
}

func quoteList(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += strconv.Quote(n)
	}
	return s
}

// memberPath is the JSON Pointer of a member, kept in two parts so that
// the string is built only when an issue needs it.
type memberPath struct {
	parent, name string // name needs no escaping
}

func (p memberPath) String() string { return p.parent + "/" + p.name }

// str checks that v is a string of at least minLen code points.
func (d *decoder) str(v strictjson.Value, at memberPath, minLen int) (string, bool) {
	if v.Kind() != strictjson.String {
		d.add(at.String(), IssueType, "expected a string, found "+kindName(v))
		return "", false
	}
	if minLen > 0 && len(v.Str()) < minLen {
		d.add(at.String(), IssueMinLength, "expected a non-empty string")
		return "", false
	}
	return v.Str(), true
}

func (d *decoder) boolean(v strictjson.Value, at memberPath) bool {
	if v.Kind() != strictjson.Bool {
		d.add(at.String(), IssueType, "expected a boolean, found "+kindName(v))
		return false
	}
	return v.Bool()
}

// amount checks a numeric context value: a number in [0, max] with at most
// maxFractionDigits digits after the point.
func (d *decoder) amount(v strictjson.Value, at memberPath, max string) (json.Number, bool) {
	if v.Kind() != strictjson.Number {
		d.add(at.String(), IssueType, "expected a number, found "+kindName(v))
		return "", false
	}
	s := v.Str()
	x := decimal.ParseNumber(s)
	if zeroNumber.Cmp(x) > 0 {
		d.add(at.String(), IssueMinimum, "expected a number >= 0, found "+clip.String(s))
		return "", false
	}
	if boundNumber(max).Cmp(x) < 0 {
		d.add(at.String(), IssueMaximum, "expected a number <= "+max+", found "+clip.String(s))
		return "", false
	}
	// Text of at most maxFractionDigits bytes without an exponent cannot
	// have more fraction digits than that.
	if (len(s) > maxFractionDigits || strings.ContainsAny(s, "eE")) && decimal.FractionDigits(s) > maxFractionDigits {
		d.add(at.String(), IssuePrecision, "expected at most 400 digits after the decimal point")
		return "", false
	}
	return json.Number(v.Str()), true
}

// Parsed forms of the bounds amount compares with.
var (
	zeroNumber       = decimal.ParseNumber("0")
	maxNumericNumber = decimal.ParseNumber(maxNumeric)
	oneNumber        = decimal.ParseNumber("1")
)

func boundNumber(max string) decimal.Number {
	switch max {
	case maxNumeric:
		return maxNumericNumber
	case "1":
		return oneNumber
	}
	return decimal.ParseNumber(max)
}

// integer checks an integer context value in [min, 1e9]; 2.0 is an integer.
func (d *decoder) integer(v strictjson.Value, at memberPath, min int) (json.Number, bool) {
	if v.Kind() != strictjson.Number {
		d.add(at.String(), IssueType, "expected an integer, found "+kindName(v))
		return "", false
	}
	if !decimal.IsInteger(v.Str()) {
		d.add(at.String(), IssueInteger, "expected an integer, found "+clip.String(v.Str()))
		return "", false
	}
	if decimal.Compare(v.Str(), strconv.Itoa(min)) < 0 {
		d.add(at.String(), IssueMinimum, "expected an integer >= "+strconv.Itoa(min)+", found "+clip.String(v.Str()))
		return "", false
	}
	if decimal.Compare(v.Str(), maxNumeric) > 0 {
		d.add(at.String(), IssueMaximum, "expected an integer <= "+maxNumeric+", found "+clip.String(v.Str()))
		return "", false
	}
	return json.Number(v.Str()), true
}

// numberField is a json.Number field of a request built in Go.
type numberField struct {
	path     string
	n        json.Number
	required bool
}

// numberFieldIssues reports what encoding a Go-built request as JSON would
// hide: a required number left empty (encoding/json writes an empty
// json.Number as 0) and text that is not a JSON number.
func numberFieldIssues(fields ...numberField) *Error {
	var d decoder
	for _, f := range fields {
		switch {
		case f.n == "" && f.required:
			d.add(f.path, IssueRequired, "missing required number (the json.Number is empty)")
		case f.n != "" && !decimal.Valid(string(f.n)):
			d.add(f.path, IssueType, "expected a number, found "+strconv.Quote(clip.String(string(f.n))))
		}
	}
	return d.err()
}
