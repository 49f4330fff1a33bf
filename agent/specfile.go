package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentpreflight/preflight"
)

// specMembers are the members a tool-spec file adds to an operation of a
// catalog file.
var specMembers = []string{"priceUsd", "ttlSeconds", "retryCap"}

var specMemberPath = regexp.MustCompile(`^/operations/[0-9]+/(priceUsd|ttlSeconds|retryCap)$`)

// DecodeToolSpecs reads a tool-spec file: a catalog file (see
// [preflight.DecodeCatalog]) whose operations may also carry
//
//	"priceUsd":   what one call costs, a non-negative decimal (default 0);
//	"ttlSeconds": how long a result may be reused, an integer 0..1000000000
//	              (default: the caller's);
//	"retryCap":   terminal failures that end retrying, an integer >= 1
//	              (default: the caller's).
//
// It returns the file's operations as specs, in file order (the built-in
// operations are not included). Decoding is as strict as DecodeCatalog's,
// and every problem is reported in one *preflight.Error with JSON Pointers
// into the file.
func DecodeToolSpecs(data []byte) ([]ToolSpec, error) {
	if _, err := preflight.DecodeCatalog(data); err != nil {
		var pe *preflight.Error
		if !errors.As(err, &pe) {
			return nil, err
		}
		var keep []preflight.Issue
		for _, is := range pe.Details {
			if is.Code == preflight.IssueUnknownField && specMemberPath.MatchString(is.Path) {
				continue
			}
			if is.Code == preflight.IssueUnknownField && strings.HasPrefix(is.Path, "/operations/") && strings.Count(is.Path, "/") == 3 {
				for _, m := range specMembers {
					is.Message += ", " + strconv.Quote(m)
				}
			}
			keep = append(keep, is)
		}
		if len(keep) > 0 || len(pe.Details) == 0 {
			e := *pe
			e.Details = keep
			e.Message = fileMessage(&e)
			return nil, &e
		}
	}
	// The file is strict JSON apart from the spec members: read it loosely.
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var ops []map[string]json.RawMessage
	if err := json.Unmarshal(doc["operations"], &ops); err != nil {
		return nil, err
	}
	var issues []preflight.Issue
	specs := make([]ToolSpec, len(ops))
	for i, op := range ops {
		at := "/operations/" + strconv.Itoa(i) + "/"
		for _, name := range specMembers {
			raw, ok := op[name]
			if !ok {
				continue
			}
			delete(op, name)
			n, msg := specNumber(name, raw)
			if msg != "" {
				issues = append(issues, preflight.Issue{Path: at + name, Code: preflight.IssueType, Message: msg})
				continue
			}
			switch name {
			case "priceUsd":
				specs[i].PriceUSD = n
			case "ttlSeconds":
				specs[i].TTLSeconds = n
			case "retryCap":
				specs[i].RetryCap = n
			}
		}
	}
	if len(issues) > 0 {
		e := &preflight.Error{Code: preflight.CodeInvalidRequest, Details: issues}
		e.Message = fileMessage(e)
		return nil, e
	}
	doc["operations"], _ = json.Marshal(ops)
	plain, _ := json.Marshal(doc)
	c, err := preflight.DecodeCatalog(plain)
	if err != nil {
		var pe *preflight.Error
		if errors.As(err, &pe) {
			e := *pe
			e.Message = fileMessage(&e)
			return nil, &e
		}
		return nil, err
	}
	all := c.Operations()
	fileOps := all[len(all)-len(ops):]
	for i := range specs {
		specs[i].Operation = fileOps[i]
	}
	return specs, nil
}

// fileMessage is the summary of a decoding error e of a tool-spec file:
// the catalog decoder's speaks of a request body.
func fileMessage(e *preflight.Error) string {
	switch e.Code {
	case preflight.CodeInvalidJSON:
		return "the tool-spec file is not valid JSON"
	case preflight.CodeInvalidRequest:
		switch len(e.Details) {
		case 0:
		case 1:
			return "the tool-spec file has 1 problem"
		default:
			return "the tool-spec file has " + strconv.Itoa(len(e.Details)) + " problems"
		}
	case preflight.CodeLimitExceeded:
		return "the tool-spec file exceeds a limit"
	}
	return e.Message
}

// specNumber checks one spec member and returns it as a number, or a
// message saying what was expected.
func specNumber(name string, raw json.RawMessage) (json.Number, string) {
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", "expected a number"
	}
	n, ok := v.(json.Number)
	if !ok {
		return "", "expected a number, found " + string(raw)
	}
	switch name {
	case "priceUsd":
		if f, err := n.Float64(); err != nil || f < 0 || f > 1e9 {
			return "", "expected a non-negative decimal of dollars no greater than 1000000000, found " + n.String()
		}
	case "ttlSeconds":
		if i, err := strconv.ParseInt(n.String(), 10, 64); err != nil || i < 0 || i > 1e9 {
			return "", "expected an integer number of seconds, 0..1000000000, found " + n.String()
		}
	case "retryCap":
		if i, err := strconv.ParseInt(n.String(), 10, 64); err != nil || i < 1 || i > 1e9 {
			return "", "expected an integer >= 1, found " + n.String()
		}
	}
	return n, ""
}
