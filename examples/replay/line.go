package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentpreflight/preflight"
)

// line is one recorded tool call. See the package doc for the format.
type line struct {
	T               number            `json:"t"`
	RunID           string            `json:"runId"`
	StepID          string            `json:"stepId"`
	ToolCallID      string            `json:"toolCallId"`
	Provider        string            `json:"provider"`
	Operation       string            `json:"operation"`
	Request         json.RawMessage   `json:"request"`
	CostUSD         number            `json:"costUsd"`
	ModelCostUSD    number            `json:"modelCostUsd"`
	Outcome         preflight.Outcome `json:"outcome"`
	ResultReference string            `json:"resultReference"`
	GoalHash        string            `json:"goalHash"`
}

// decodeLine parses one non-blank line strictly: one JSON object, no unknown
// members, every required member present and well-formed.
func decodeLine(b []byte) (*line, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var members map[string]json.RawMessage
	if json.Unmarshal(b, &members) == nil {
		for _, name := range []string{"t", "costUsd", "modelCostUsd"} {
			if v, ok := members[name]; ok && !startsNumber(v) {
				return nil, fmt.Errorf("%q is %s; want a JSON number", name, v)
			}
		}
	}
	var l line
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("not a valid record: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value on the line")
	}
	var missing []string
	for name, empty := range map[string]bool{
		"t": l.T == "", "stepId": l.StepID == "", "provider": l.Provider == "", "operation": l.Operation == "",
		"request": len(l.Request) == 0, "costUsd": l.CostUSD == "", "outcome": l.Outcome == "",
	} {
		if empty {
			missing = append(missing, `"`+name+`"`)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("missing or empty %s", strings.Join(missing, ", "))
	}
	if t := bytes.TrimSpace(l.Request); len(t) == 0 || t[0] != '{' {
		return nil, errors.New(`"request" must be a JSON object`)
	}
	switch l.Outcome {
	case preflight.OutcomeSuccess, preflight.OutcomeTerminalFailure, preflight.OutcomeTransientFailure:
	default:
		return nil, fmt.Errorf(`"outcome" is %q; want success, terminal_failure or transient_failure`, l.Outcome)
	}
	for name, v := range map[string]number{"t": l.T, "costUsd": l.CostUSD, "modelCostUsd": l.ModelCostUSD} {
		if v == "" {
			continue
		}
		if r, err := parseDecimal(json.Number(v)); err != nil || r.Sign() < 0 {
			return nil, fmt.Errorf("%q is %s; want a non-negative number", name, v)
		}
	}
	return &l, nil
}

// number is a JSON number kept as its text. Unlike json.Number it refuses a
// quoted string: money and times in a run file are JSON numbers.
type number string

func (n *number) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] == '"' || string(b) == "null" {
		return fmt.Errorf("want a JSON number, got %s", b)
	}
	*n = number(b)
	return nil
}

func startsNumber(v []byte) bool {
	return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}
