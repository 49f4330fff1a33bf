package mcpproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Which tools a principal sees and may call (Options.ToolAllowed). A tool
// a principal may not call is left out of every tools/list answer it gets,
// JSON or event stream, either generation, and its tools/call is answered
// as the go-sdk's servers answer a tool they do not have, without being
// decided or forwarded.

// policyRefusal returns the refusal of a call of params that the scope's
// principal may not make, or nil.
func (p *Proxy) policyRefusal(sc *scope, params json.RawMessage) *jsonrpc.Error {
	if p.opts.ToolAllowed == nil {
		return nil
	}
	return p.toolRefusal(sc, toolOf(params))
}

// toolRefusal is policyRefusal of a call of the tool name (toolOf its
// params).
func (p *Proxy) toolRefusal(sc *scope, name string) *jsonrpc.Error {
	if p.opts.ToolAllowed == nil {
		return nil
	}
	if p.opts.ToolAllowed(sc.key.principal, name) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool " + strconv.Quote(name)}
}

// filterList returns a tools/list result with the tools principal may not
// see left out; result as it came when it hides nothing.
func (p *Proxy) filterList(principal string, result json.RawMessage) json.RawMessage {
	if p.opts.ToolAllowed == nil || len(result) == 0 {
		return result
	}
	var r map[string]json.RawMessage
	var list []json.RawMessage
	if json.Unmarshal(result, &r) != nil || json.Unmarshal(r["tools"], &list) != nil {
		return result
	}
	kept := make([]json.RawMessage, 0, len(list))
	for _, t := range list {
		var head struct {
			Name string `json:"name"`
		}
		json.Unmarshal(t, &head)
		if p.opts.ToolAllowed(principal, head.Name) {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(list) {
		return result
	}
	r["tools"] = mustJSON(kept)
	return mustJSON(r)
}

// filterMessage filters the tools/list response in the JSON-RPC message
// data; data as it came when it is something else.
func (p *Proxy) filterMessage(principal string, data []byte) []byte {
	m, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return data
	}
	res, ok := m.(*jsonrpc.Response)
	if !ok || res.Error != nil {
		return data
	}
	filtered := p.filterList(principal, res.Result)
	if string(filtered) == string(res.Result) {
		return data
	}
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: res.ID, Result: filtered})
	if err != nil {
		return data
	}
	return out
}

// filterStream filters the tools/list response of an event stream body,
// every other event passing as it came.
func (p *Proxy) filterStream(principal string, body []byte) []byte {
	var out bytes.Buffer
	var event []string // the lines of the event being read
	var data bytes.Buffer
	flush := func() {
		if data.Len() > 0 {
			filtered := p.filterMessage(principal, data.Bytes())
			if !bytes.Equal(filtered, data.Bytes()) {
				kept := event[:0]
				for _, l := range event {
					if !bytes.HasPrefix([]byte(l), []byte("data:")) {
						kept = append(kept, l)
					}
				}
				event = append(kept, "data: "+string(filtered))
			}
		}
		for _, l := range event {
			out.WriteString(l)
			out.WriteByte('\n')
		}
		out.WriteByte('\n')
		event, data = event[:0], bytes.Buffer{}
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, len(body)+1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		event = append(event, line)
		if rest, ok := bytes.CutPrefix([]byte(line), []byte("data:")); ok {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(rest, []byte(" ")))
		}
	}
	if len(event) > 0 {
		flush()
	}
	return out.Bytes()
}
