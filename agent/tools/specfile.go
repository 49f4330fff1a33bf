package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/internal/decimal"
	"github.com/agentpreflight/preflight/strictjson"
)

// specMembers are the members a tool-spec file adds to an operation of a
// catalog file.
var specMembers = []string{"priceUsd", "ttlSeconds", "retryCap", "idempotencySeconds", "approval"}

// DecodeSpecs reads a tool-spec file: a catalog file (see
// [preflight.DecodeCatalog]) whose operations may also carry
//
//	"priceUsd":   what one call costs, a non-negative decimal (default 0);
//	"ttlSeconds": how long a result may be reused, an integer 0..1000000000
//	              (default: the caller's);
//	"retryCap":   terminal failures that end retrying, an integer >= 1
//	              (default: the caller's);
//	"idempotencySeconds": how long a completed call answers an identical
//	              call with its result instead of running again, an
//	              integer 0..1000000000 (default: the caller's; 0 off);
//	"approval":   when a call needs a person's consent before it runs:
//	              "always", "destructive" (when the tool's effects, or its
//	              MCP annotations, say destructive) or {"aboveUsd": AMOUNT}
//	              (when the call's estimated cost, its priceUsd, is above
//	              AMOUNT, a non-negative decimal written as a JSON number or
//	              a string holding one); absent never asks (see
//	              [Set.Consent]).
//
// It returns the file's operations as specs, in file order (the built-in
// operations are not included). Decoding is as strict as DecodeCatalog's,
// and every problem is reported in one *preflight.Error with JSON Pointers
// into the file.
func DecodeSpecs(data []byte) ([]Spec, error) {
	_, specs, err := DecodeSpecFile(data)
	return specs, err
}

// DecodeSpecFile is DecodeSpecs that also returns the file's catalog (the
// built-in operations included unless the file says "builtins": false),
// for a reader such as preflightd --operations that decides calls and
// accepts a tool-spec file as it is.
func DecodeSpecFile(data []byte) (*preflight.Catalog, []Spec, error) {
	// The file read loosely for the spec members (a file whose operations
	// cannot be read is left to DecodeCatalog's report), and the pointer
	// of every member of its operations, to tell DecodeCatalog's reports
	// of them.
	specs, plain, issues, members := readSpecMembers(data)
	var keep []preflight.Issue
	catalogErr := &preflight.Error{Code: preflight.ErrorInvalidRequest}
	if _, err := preflight.DecodeCatalog(data); err != nil {
		var pe *preflight.Error
		if !errors.As(err, &pe) {
			return nil, nil, err
		}
		if pe.Code == preflight.ErrorInvalidJSON {
			return nil, nil, fileError(pe, pe.Details)
		}
		for _, is := range pe.Details {
			if spec, ofOperation := members[is.Path]; ofOperation && is.Code == preflight.IssueUnknownField {
				if spec {
					continue // a member of a tool-spec file, not of a catalog file
				}
				for _, m := range specMembers {
					is.Message += ", " + strconv.Quote(m)
				}
			}
			keep = append(keep, is)
		}
		if len(keep) > 0 || len(pe.Details) == 0 {
			catalogErr = pe
		}
	}
	if issues = append(keep, issues...); len(issues) > 0 || catalogErr.Code != preflight.ErrorInvalidRequest {
		return nil, nil, fileError(catalogErr, issues)
	}
	c, err := preflight.DecodeCatalog(plain)
	if err != nil {
		if pe := (*preflight.Error)(nil); errors.As(err, &pe) {
			return nil, nil, fileError(pe, pe.Details)
		}
		return nil, nil, err
	}
	all := c.Operations()
	fileOps := all[len(all)-len(specs):]
	for i := range specs {
		specs[i].Operation = fileOps[i]
	}
	return c, specs, nil
}

// readSpecMembers reads the spec members of the operations of a tool-spec
// file and returns the specs they make, the file without them (a catalog
// file), a problem with each member that is out of its range, and the
// JSON Pointer of every member of every operation, true for the spec
// members. A file whose operations cannot be read is left to
// DecodeCatalog's report.
func readSpecMembers(data []byte) ([]Spec, []byte, []preflight.Issue, map[string]bool) {
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var ops []json.RawMessage
	if dec.Decode(&doc) != nil || json.Unmarshal(doc["operations"], &ops) != nil {
		return nil, nil, nil, nil
	}
	var issues []preflight.Issue
	members := make(map[string]bool)
	specs := make([]Spec, len(ops))
	for i, raw := range ops {
		var op map[string]json.RawMessage
		if json.Unmarshal(raw, &op) != nil || op == nil {
			continue // not an object: DecodeCatalog says so
		}
		at := "/operations/" + strconv.Itoa(i) + "/"
		for name := range op {
			members[at+strictjson.EscapePointerToken(name)] = slices.Contains(specMembers, name)
		}
		for _, name := range specMembers {
			raw, ok := op[name]
			if !ok {
				continue
			}
			delete(op, name)
			if name == "approval" {
				a, is := decodeApproval(at+name, raw)
				if is != nil {
					issues = append(issues, *is)
				}
				specs[i].Approval = a
				continue
			}
			n, code, msg := specNumber(name, raw)
			if msg != "" {
				issues = append(issues, preflight.Issue{Path: at + name, Code: code, Message: msg})
				continue
			}
			switch name {
			case "priceUsd":
				specs[i].PriceUSD = n
			case "ttlSeconds":
				specs[i].TTLSeconds = n
			case "retryCap":
				specs[i].RetryCap = n
			case "idempotencySeconds":
				specs[i].IdempotencySeconds = n
			}
		}
		ops[i], _ = json.Marshal(op)
	}
	doc["operations"], _ = json.Marshal(ops)
	plain, _ := json.Marshal(doc)
	return specs, plain, issues, members
}

// fileError is the error of a tool-spec file with issues, with the code of
// the catalog decoder's error e and a summary of its own: the catalog
// decoder's speaks of a request body.
func fileError(e *preflight.Error, issues []preflight.Issue) error {
	out := &preflight.Error{Code: e.Code, Message: e.Message, Details: issues}
	switch e.Code {
	case preflight.ErrorInvalidJSON:
		out.Message = "the tool-spec file is not valid JSON"
	case preflight.ErrorInvalidRequest:
		switch len(issues) {
		case 0:
		case 1:
			out.Message = "the tool-spec file has 1 problem"
		default:
			out.Message = "the tool-spec file has " + strconv.Itoa(len(issues)) + " problems"
		}
	case preflight.ErrorLimitExceeded:
		out.Message = "the tool-spec file exceeds a limit"
	}
	return out
}

// specNumber checks one spec member and returns it as a number, or the
// issue code and a message saying what was expected.
func specNumber(name string, raw json.RawMessage) (json.Number, preflight.IssueCode, string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return "", preflight.IssueType, "expected a number, found " + strconv.Quote(string(raw))
	}
	n, ok := v.(json.Number)
	if !ok {
		return "", preflight.IssueType, "expected a number, found " + string(raw)
	}
	switch name {
	case "priceUsd":
		// Compared exactly: a float64 rounds a long-written price.
		if t := n.String(); !decimal.Valid(t) || decimal.Compare(t, "0") < 0 || decimal.Compare(t, "1000000000") > 0 {
			return "", rangeCode(decimal.Valid(t) && decimal.Compare(t, "0") < 0), "expected a non-negative decimal of dollars no greater than 1000000000, found " + n.String()
		}
	case "ttlSeconds", "idempotencySeconds":
		if i, err := strconv.ParseInt(n.String(), 10, 64); err != nil || i < 0 || i > 1e9 {
			return "", intCode(err, i < 0), "expected an integer number of seconds, 0..1000000000, found " + n.String()
		}
	case "retryCap":
		if i, err := strconv.ParseInt(n.String(), 10, 64); err != nil || i < 1 || i > 1e9 {
			return "", intCode(err, i < 1), "expected an integer >= 1, found " + n.String()
		}
	}
	return n, "", ""
}

// rangeCode is the issue of a number below (low) or above its range.
func rangeCode(low bool) preflight.IssueCode {
	if low {
		return preflight.IssueMinimum
	}
	return preflight.IssueMaximum
}

// intCode is the issue of an integer member that did not parse (err) or
// is out of its range.
func intCode(err error, low bool) preflight.IssueCode {
	if err != nil {
		return preflight.IssueInteger
	}
	return rangeCode(low)
}
