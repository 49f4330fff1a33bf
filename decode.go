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

// parseObject parses a private copy of data within lim and requires an
// object. The tree reads the copy, never the caller's bytes, so nothing the
// caller does to data while or after the call changes what was read.
// parse is strictjson.Parse, or strictjson.ParseScratch for a tree the
// caller releases before it returns.
func parseObject(data []byte, lim strictjson.Limits, parse func([]byte, strictjson.Limits) (strictjson.Value, error)) (strictjson.Value, *Error) {
	return parseOwnedObject(bytes.Clone(data), lim, parse)
}

// parseOwnedObject is parseObject of a copy nobody else holds.
func parseOwnedObject(own []byte, lim strictjson.Limits, parse func([]byte, strictjson.Limits) (strictjson.Value, error)) (strictjson.Value, *Error) {
	root, err := parse(own, lim)
	if err != nil {
		return strictjson.Value{}, ParseError(err)
	}
	if root.Kind() != strictjson.Object {
		msg := "expected an object, found " + kindName(root)
		root.Release()
		return strictjson.Value{}, &Error{Code: ErrorInvalidRequest, Message: "the request must be a JSON object",
			Details: []Issue{{Path: "", Code: IssueType, Message: msg}}}
	}
	return root, nil
}

// ParseError is the *Error for err, an error of [strictjson.Parse] or
// [strictjson.ParseScratch] reading a whole request document: a document
// over a depth or node limit (or the parser's size limit) is
// limit_exceeded, with detail max_depth or max_nodes; anything else that
// is not JSON (a syntax error, a duplicate member name, invalid UTF-8) is
// invalid_json, with detail invalid_json, duplicate_key or invalid_utf8.
// The detail's path is the parser's pointer; messages carry no byte
// offset. The decoders, the reference server and its MCP transport all
// report parser errors through it.
func ParseError(err error) *Error {
	return parseErrorAt(err, "", strictjson.Limits{})
}

// parseErrorAt is ParseError for the text of the member at pointer at of
// a request, parsed on its own within what the whole document's limits,
// doc, leave for it: the pointer and a depth or node message are those the
// whole document would have drawn.
func parseErrorAt(err error, at string, doc strictjson.Limits) *Error {
	var pe *strictjson.Error
	if !errors.As(err, &pe) {
		return &Error{Code: ErrorInvalidJSON, Message: err.Error()}
	}
	path, msg := at+pe.Pointer, pe.Msg
	switch pe.Kind {
	case strictjson.ErrDepth:
		if at != "" {
			msg = depthMessage(doc.MaxDepth)
		}
		return issuesError([]Issue{{Path: path, Code: IssueMaxDepth, Message: msg}})
	case strictjson.ErrNodes:
		if at != "" {
			msg = nodesMessage(doc.MaxNodes)
		}
		return issuesError([]Issue{{Path: path, Code: IssueMaxNodes, Message: msg}})
	case strictjson.ErrDuplicateKey:
		return &Error{Code: ErrorInvalidJSON, Message: "the body is not valid JSON: duplicate object member name",
			Details: []Issue{{Path: path, Code: IssueDuplicateKey, Message: msg}}}
	case strictjson.ErrInvalidUTF8:
		return invalidUTF8Error(path, msg)
	}
	return &Error{Code: ErrorInvalidJSON, Message: "the body is not valid JSON",
		Details: []Issue{{Path: path, Code: IssueInvalidJSON, Message: msg}}}
}

// invalidUTF8Error is the error for a string that is not UTF-8 at path.
func invalidUTF8Error(path, msg string) *Error {
	return &Error{Code: ErrorInvalidJSON, Message: "the body is not valid JSON: invalid UTF-8",
		Details: []Issue{{Path: path, Code: IssueInvalidUTF8, Message: msg}}}
}

// The parser's messages for its limits, as it words them for a whole
// document; a member parsed on its own gets a smaller limit, and these
// restore the whole document's figure (FuzzGoBuiltReadsAsBytes holds them
// to the parser's).
func depthMessage(limit int) string {
	return "document is nested deeper than " + strconv.Itoa(limit) + " levels"
}

func nodesMessage(limit int) string {
	return "document has more than " + strconv.Itoa(limit) + " values"
}

// utf8Message is the parser's message for a string that is not UTF-8.
const utf8Message = "string contains invalid UTF-8"

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

// amount checks a numeric context value: a number in [0, max] with at
// most maxFractionDigits digits after the point. It returns the value.
func (d *decoder) amount(v strictjson.Value, at memberPath, max string) (decimal.Dec, bool) {
	if v.Kind() != strictjson.Number {
		d.add(at.String(), IssueType, "expected a number, found "+kindName(v))
		return decimal.Dec{}, false
	}
	return d.amountText(v.Str(), at, max)
}

// amountText is amount for s, valid JSON number text.
func (d *decoder) amountText(s string, at memberPath, max string) (decimal.Dec, bool) {
	x := decimal.ParseNumber(s)
	if zeroNumber.Cmp(x) > 0 {
		d.add(at.String(), IssueMinimum, "expected a number >= 0, found "+clip.String(s))
		return decimal.Dec{}, false
	}
	if boundNumber(max).Cmp(x) < 0 {
		d.add(at.String(), IssueMaximum, "expected a number <= "+max+", found "+clip.String(s))
		return decimal.Dec{}, false
	}
	// Text of at most maxFractionDigits bytes without an exponent cannot
	// have more fraction digits than that.
	if (len(s) > maxFractionDigits || strings.IndexByte(s, 'e') >= 0 || strings.IndexByte(s, 'E') >= 0) && decimal.FractionDigits(s) > maxFractionDigits {
		d.add(at.String(), IssuePrecision, "expected at most 400 digits after the decimal point")
		return decimal.Dec{}, false
	}
	return decimal.Parse(s), true
}

// goNumber reads n, a json.Number of a request built in Go, for amount
// or integer: it reports an empty n as missing when required (encoding/json
// would quietly write it as 0) and text that is not a JSON number, and
// returns n's text and whether there is one to check.
func (d *decoder) goNumber(n json.Number, at memberPath, required bool) (string, bool) {
	switch {
	case n == "":
		if required {
			d.add(at.String(), IssueRequired, "missing required number (the json.Number is empty)")
		}
		return "", false
	case !decimal.Valid(string(n)):
		d.add(at.String(), IssueType, "expected a number, found "+strconv.Quote(clip.String(string(n))))
		return "", false
	}
	return string(n), true
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

// integer checks an integer context value in [min, 1e9]; 2.0 is an
// integer. It returns the value.
func (d *decoder) integer(v strictjson.Value, at memberPath, min int) (decimal.Dec, bool) {
	if v.Kind() != strictjson.Number {
		d.add(at.String(), IssueType, "expected an integer, found "+kindName(v))
		return decimal.Dec{}, false
	}
	return d.integerText(v.Str(), at, min)
}

// integerText is integer for s, valid JSON number text.
func (d *decoder) integerText(s string, at memberPath, min int) (decimal.Dec, bool) {
	if !decimal.IsInteger(s) {
		d.add(at.String(), IssueInteger, "expected an integer, found "+clip.String(s))
		return decimal.Dec{}, false
	}
	if decimal.Compare(s, strconv.Itoa(min)) < 0 {
		d.add(at.String(), IssueMinimum, "expected an integer >= "+strconv.Itoa(min)+", found "+clip.String(s))
		return decimal.Dec{}, false
	}
	if decimal.Compare(s, maxNumeric) > 0 {
		d.add(at.String(), IssueMaximum, "expected an integer <= "+maxNumeric+", found "+clip.String(s))
		return decimal.Dec{}, false
	}
	return decimal.Parse(s), true
}
