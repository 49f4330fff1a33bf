package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentpreflight/preflight"
)

// A request case and the answer it must get. The answers of the check and
// tool-call routes (and of their MCP tools) are computed in process with
// the library, so every response is compared with what preflight itself
// says: the same bytes for a result, the same status and error code for an
// error.
type loadCase struct {
	name    string
	kind    string // valid, invalid, oversized, mcp, health
	method  string
	path    string
	body    []byte
	headers map[string]string

	status  int
	body200 []byte // the exact 200 body (or MCP text block); nil: not compared
	code    string // error.code of an error answer; for MCP, of an isError result
	mcpErr  bool   // an MCP tool result with isError true
}

const (
	checkPath = "/check-request"
	toolPath  = "/v0.2/preflight/tool-call"
)

var checkBodies = map[string]string{
	"check valid":     `{"request":{"method":"POST","url":"https://api.example.com/v1/orders","headers":{"Content-Type":"application/json"},"body":{"sku":"A-1","qty":2}},"schema":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string","minLength":1,"pattern":"^[A-Z]-[0-9]+$"},"qty":{"type":"integer","minimum":1}},"additionalProperties":false}}`,
	"check invalid":   `{"request":{"method":"POST","url":"https://api.example.com/v1/orders","body":{"sku":"","qty":0,"note":"x"}},"schema":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string","minLength":1},"qty":{"type":"integer","minimum":1}},"additionalProperties":false}}`,
	"check economics": `{"request":{"method":"POST","url":"https://api.example.com/v1/orders","body":{"qty":0}},"schema":{"type":"object","properties":{"qty":{"type":"integer","minimum":1}}},"economics":{"downstreamCostUsd":0.05,"billsOnInvalidRequest":true,"retryCostUsd":0.01}}`,
	"check array":     `{"request":{"method":"PUT","url":"https://api.example.com/items","headers":{"Authorization":"Bearer x"},"body":[` + strings.TrimSuffix(strings.Repeat(`{"id":1,"tags":["a","b"]},`, 200), ",") + `]},"schema":{"type":"array","items":{"type":"object","required":["id"],"properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"enum":["a","b","c"]}}}}}}`,
	// Input errors, answered 400 by the library's own decoder.
	"check malformed":       `{"request":{"method":"POST"`,
	"check duplicate key":   `{"schema":{},"schema":{},"request":{"method":"GET","url":"https://a.example/"}}`,
	"check unsupported":     `{"request":{"method":"POST","url":"https://a.example/","body":"a"},"schema":{"type":"string","format":"email"}}`,
	"check pattern bomb":    `{"request":{"method":"POST","url":"https://a.example/","body":"a"},"schema":{"pattern":"` + strings.Repeat(`(?:a|b){1000}`, 50) + `"}}`,
	"check too deep":        `{"request":{"method":"POST","url":"https://a.example/","body":` + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + `},"schema":{}}`,
	"check missing members": `{"request":{"method":"PO ST","url":"ftp://x"}}`,
}

var toolBodies = map[string]string{
	"tool allow":   `{"runId":"run-1","stepId":"step-1","tool":{"provider":"search","operation":"web_search","request":{"query":"preflight checks for agents","max_results":5},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1}}`,
	"tool block":   `{"runId":"run-1","stepId":"step-2","tool":{"provider":"browse","operation":"fetch","request":{"url":"not a url"},"estimatedExternalCostUsd":0.002},"budget":{"remainingUsd":1}}`,
	"tool defer":   `{"runId":"run-1","stepId":"step-3","tool":{"provider":"search","operation":"search:web_search","request":{"query":"q"},"estimatedExternalCostUsd":0.2},"budget":{"remainingUsd":0.3,"reservedUsd":0.2}}`,
	"tool advise":  `{"runId":"run-1","stepId":"step-4","tool":{"provider":"maps","operation":"geocode","request":{"q":"Paris"},"estimatedExternalCostUsd":0.005},"budget":{"remainingUsd":1}}`,
	"tool history": `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1},"history":[` + strings.TrimSuffix(strings.Repeat(`{"toolCallId":"c","fingerprint":"`+strings.Repeat("f", 500)+`","outcome":"transient_failure","ageSeconds":1},`, 100), ",") + `]}`,
	// Input errors.
	"tool malformed":    `{"runId":`,
	"tool missing":      `{"runId":"","tool":{"provider":"search"}}`,
	"tool 101 history":  `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1},"history":[` + strings.TrimSuffix(strings.Repeat(`{"toolCallId":"c","fingerprint":"f","outcome":"success","ageSeconds":1},`, 101), ",") + `]}`,
	"tool too deep":     `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q","x":` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`,
	"tool 1e400 budget": `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1e400}}`,
}

// expectLibrary computes the answer to body on path with the library.
func expectLibrary(path string, body []byte) (status int, out []byte, code string, err error) {
	var res any
	var lerr error
	if path == checkPath {
		res, lerr = preflight.CheckJSON(body)
	} else {
		res, lerr = preflight.DecideJSON(body)
	}
	if lerr != nil {
		var pe *preflight.Error
		if !errors.As(lerr, &pe) {
			return 0, nil, "", fmt.Errorf("the library returned %T, not *preflight.Error: %v", lerr, lerr)
		}
		return 400, nil, string(pe.Code), nil
	}
	out, err = json.Marshal(res)
	return 200, out, "", err
}

// buildCases returns every case of the mix, with its expected answer.
func buildCases() ([]loadCase, error) {
	// A reuse proposal needs the fingerprint the library gives toolAllow.
	d, err := preflight.DecideJSON([]byte(toolBodies["tool allow"]))
	if err != nil {
		return nil, err
	}
	tools := map[string]string{}
	for k, v := range toolBodies {
		tools[k] = v
	}
	tools["tool reuse"] = `{"runId":"run-1","stepId":"step-5","tool":{"provider":"search","operation":"web_search","request":{"query":"preflight checks for agents","max_results":5},"estimatedExternalCostUsd":0.01},"budget":{"remainingUsd":1},"task":{"goalHash":"g1"},"capabilities":{"canReusePriorResult":true,"canReduceScope":false},"freshnessTtlSeconds":600,"history":[{"toolCallId":"call-7","fingerprint":"` + d.RequestFingerprint + `","outcome":"success","resultReference":"mem://results/7","ageSeconds":60,"goalHash":"g1"}]}`

	var cases []loadCase
	add := func(path string, bodies map[string]string) error {
		for _, name := range sortedKeys(bodies) {
			body := []byte(bodies[name])
			status, out, code, err := expectLibrary(path, body)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			kind := "valid"
			if status != 200 {
				kind = "invalid"
			}
			cases = append(cases, loadCase{name: name, kind: kind, method: "POST", path: path, body: body,
				headers: map[string]string{"Content-Type": "application/json", "Accept": "application/json"},
				status:  status, body200: out, code: code})
			// The same arguments through the MCP tool.
			tool := "check_request"
			if path == toolPath {
				tool = "preflight_tool_call"
			}
			msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(body) + `}}`)
			if !json.Valid(msg) || bytes.Count(body, []byte("[")) > 900 {
				continue // not an argument object, or too deep for the SDK's JSON-RPC decoder
			}
			cases = append(cases, loadCase{name: "mcp " + name, kind: "mcp", method: "POST", path: "/mcp", body: msg,
				headers: map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
				status:  200, body200: out, code: code, mcpErr: status != 200})
		}
		return nil
	}
	if err := add(checkPath, checkBodies); err != nil {
		return nil, err
	}
	if err := add(toolPath, tools); err != nil {
		return nil, err
	}
	big := []byte(`{"pad":"` + strings.Repeat("x", 70000) + `"}`)
	for _, p := range []string{checkPath, toolPath, "/mcp"} {
		cases = append(cases, loadCase{name: "oversized " + p, kind: "oversized", method: "POST", path: p, body: big,
			headers: map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
			status:  413, code: "payload_too_large"})
	}
	cases = append(cases,
		loadCase{name: "text/plain body", kind: "invalid", method: "POST", path: checkPath, body: []byte(checkBodies["check valid"]),
			headers: map[string]string{"Content-Type": "text/plain"}, status: 400, code: "unsupported_media_type"},
		loadCase{name: "health", kind: "health", method: "GET", path: "/health", status: 200, body200: []byte(`{"status":"ok"}`)},
	)
	return cases, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// check compares one response with the case's expected answer and
// returns what is wrong, or "".
func (c *loadCase) check(status int, body []byte) string {
	if status != c.status {
		return fmt.Sprintf("status %d, want %d: %.200s", status, c.status, body)
	}
	if c.kind == "mcp" {
		var msg struct {
			Result *struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				StructuredContent json.RawMessage `json:"structuredContent"`
				IsError           bool            `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(body, &msg); err != nil || msg.Result == nil || len(msg.Result.Content) != 1 {
			return fmt.Sprintf("not a tools/call result: %.200s", body)
		}
		r := msg.Result
		if r.IsError != c.mcpErr {
			return fmt.Sprintf("isError %v, want %v", r.IsError, c.mcpErr)
		}
		if c.mcpErr {
			if got := envelopeCode([]byte(r.Content[0].Text)); got != c.code {
				return fmt.Sprintf("error.code %q, want %q", got, c.code)
			}
			return ""
		}
		if r.Content[0].Text != string(c.body200) {
			return fmt.Sprintf("text block differs from the library's result:\n%.200s\n%.200s", r.Content[0].Text, c.body200)
		}
		return ""
	}
	if c.body200 != nil && !bytes.Equal(bytes.TrimSpace(body), c.body200) {
		return fmt.Sprintf("body differs from the library's result:\n%.200s\n%.200s", body, c.body200)
	}
	if c.code != "" {
		if got := envelopeCode(body); got != c.code {
			return fmt.Sprintf("error.code %q, want %q", got, c.code)
		}
	}
	return ""
}

// envelopeCode returns error.code of an error envelope, or "".
func envelopeCode(b []byte) string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(b, &env)
	return env.Error.Code
}
