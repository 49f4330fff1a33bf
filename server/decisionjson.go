package server

import (
	"encoding/json"
	"fmt"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/strictjson"
)

// appendDecisionJSON appends d encoded exactly as json.Marshal(d) encodes
// it, byte for byte, and fails where Marshal fails (a json.Number that is
// not a number literal). It writes the tool-call route's answer without
// reflection: on a small decision Marshal's reflection cost as much CPU as
// the rest of the route's own work. TestDecisionJSONMatchesMarshal and
// FuzzDecisionJSON hold it to Marshal; TestDecisionJSONFields fails when
// the answer's types gain, lose or rename a member, since this encoder
// would otherwise drop it silently.
func appendDecisionJSON(b []byte, d *preflight.ToolCallDecision) ([]byte, error) {
	var err error
	b = append(b, `{"decision":`...)
	b = appendJSONString(b, string(d.Verdict))
	b = append(b, `,"enforcement":`...)
	b = appendJSONString(b, string(d.Enforcement))
	b = append(b, `,"reasonCodes":`...)
	if d.ReasonCodes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range d.ReasonCodes {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, string(c))
		}
		b = append(b, ']')
	}
	b = append(b, `,"requestFingerprint":`...)
	b = appendJSONString(b, d.RequestFingerprint)
	if d.MatchedCallID != "" {
		b = append(b, `,"matchedCallId":`...)
		b = appendJSONString(b, d.MatchedCallID)
	}
	b = append(b, `,"issues":`...)
	if d.Issues == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range d.Issues {
			is := &d.Issues[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			b = appendJSONString(b, is.Path)
			b = append(b, `,"code":`...)
			b = appendJSONString(b, string(is.Code))
			b = append(b, `,"message":`...)
			b = appendJSONString(b, is.Message)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	e := &d.Estimated
	b = append(b, `,"estimated":{"preflightCostUsd":`...)
	if b, err = appendJSONNumber(b, e.PreflightCostUSD); err != nil {
		return nil, err
	}
	b = append(b, `,"priceChargedUsd":`...)
	if b, err = appendJSONNumber(b, e.PriceChargedUSD); err != nil {
		return nil, err
	}
	b = append(b, `,"avoidableExternalCostUsd":`...)
	if b, err = appendJSONNumber(b, e.AvoidableExternalCostUSD); err != nil {
		return nil, err
	}
	b = append(b, `,"avoidableModelCostUsd":`...)
	if b, err = appendJSONNumber(b, e.AvoidableModelCostUSD); err != nil {
		return nil, err
	}
	b = append(b, `,"netSavingsUsd":`...)
	if b, err = appendJSONNumber(b, e.NetSavingsUSD); err != nil {
		return nil, err
	}
	if e.Billable {
		b = append(b, `,"billable":true`...)
	} else {
		b = append(b, `,"billable":false`...)
	}
	b = append(b, `,"confidence":`...)
	if b, err = appendJSONNumber(b, e.Confidence); err != nil {
		return nil, err
	}
	b = append(b, '}')
	if r := d.Recommendation; r != nil {
		b = append(b, `,"recommendation":{"action":`...)
		b = appendJSONString(b, string(r.Action))
		if r.ResultReference != "" {
			b = append(b, `,"resultReference":`...)
			b = appendJSONString(b, r.ResultReference)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendJSONNumber appends n as encoding/json writes a json.Number: as it
// is, "0" when empty, an error when it is not a JSON number literal.
func appendJSONNumber(b []byte, n json.Number) ([]byte, error) {
	s := string(n)
	if s == "" {
		s = "0"
	}
	if !strictjson.ValidNumber(s) {
		return nil, fmt.Errorf("json: invalid number literal %q", s)
	}
	return append(b, s...), nil
}

// jsonMarshalEscaping is encoding/json.Marshal's form of a string: <, >
// and & as \u003c, \u003e and \u0026, U+2028 and U+2029 escaped, each
// invalid UTF-8 byte as \ufffd.
const jsonMarshalEscaping = strictjson.EscapeHTML | strictjson.EscapeLineSeparators | strictjson.ReplaceInvalidUTF8

// appendJSONString appends s as a JSON string the way encoding/json's
// Marshal writes one.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	b, _ = strictjson.AppendEscaped(b, s, jsonMarshalEscaping) // always true with ReplaceInvalidUTF8
	return append(b, '"')
}
