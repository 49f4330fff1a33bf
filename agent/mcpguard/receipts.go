package mcpguard

import (
	"encoding/json"
	"sync"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/receipt"
	"github.com/agentpreflight/preflight/strictjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// receipts is a session's chain of signed decisions: each receipt names
// the one signed before it in the session, so that a dropped, reordered or
// replaced result breaks the chain.
type receipts struct {
	signer *receipt.Signer // nil: receipts are off

	mu   sync.Mutex
	last string // the hash of the last receipt signed; "" before the first
}

// signed is one decision's receipt and what it is over, as the _meta
// members of the result it goes out with.
type signed struct {
	receipt, request, response json.RawMessage
}

// sign signs dec, the decision on req, chained to the session's last
// receipt, or returns nil when receipts are off or either is nil (an
// error, or a call resumed from another process). A decision that cannot
// be signed is answered without a receipt, never withheld: the receipt
// proves the decision, it does not gate the call.
func (r *receipts) sign(req *preflight.ToolCallRequest, dec *preflight.ToolCallDecision) *signed {
	if r == nil || r.signer == nil || dec == nil || req == nil {
		return nil
	}
	response, err := json.Marshal(dec)
	if err != nil {
		return nil
	}
	request, err := json.Marshal(req)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, err := r.signer.Sign(response, r.last)
	if err != nil {
		return nil
	}
	r.last = rc.Hash()
	return &signed{receipt: rc.Marshal(), request: request, response: response}
}

// signInto returns result (a tools/call result as JSON) with the receipt
// of dec, the decision on req, in its _meta (see rewriteMeta). The
// receipt is signed, and takes its place in the chain, only when it goes
// out: not for a result that is not a JSON object, nor when receipts are
// off or either is nil (see sign), which leave result as it is.
func (r *receipts) signInto(result json.RawMessage, req *preflight.ToolCallRequest, dec *preflight.ToolCallDecision) json.RawMessage {
	if r == nil || r.signer == nil || dec == nil || req == nil {
		return result
	}
	v, err := strictjson.Parse(result, strictjson.Limits{})
	if err != nil || v.Kind() != strictjson.Object {
		return result
	}
	sg := r.sign(req, dec)
	if sg == nil {
		return result
	}
	return rewriteMetaOf(result, v, sg.members())
}

// metaMember is one member of a result's _meta.
type metaMember struct {
	key   string
	value json.RawMessage
}

// members returns the _meta members of sg, in the order they are written.
func (sg *signed) members() []metaMember {
	return []metaMember{
		{receipt.MetaKey, sg.receipt},
		{receipt.RequestMetaKey, sg.request},
		{receipt.ResponseMetaKey, sg.response},
	}
}

// into puts sg's members in res's _meta; sg nil leaves res as it is.
func (sg *signed) into(res *mcp.CallToolResult) {
	if sg == nil || res == nil {
		return
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	for _, m := range sg.members() {
		res.Meta[m.key] = m.value
	}
}

// scrub returns result without the receipt members an upstream put in its
// _meta, when the session signs receipts: a result the guard forwards
// without signing it (a call continued after input_required) must not
// carry a receipt that is not the guard's, such as a genuine one of
// another call handed back. A result without such members, or a session
// that signs nothing, is returned as it is.
func (r *receipts) scrub(result json.RawMessage) json.RawMessage {
	if r == nil || r.signer == nil {
		return result
	}
	v, err := strictjson.Parse(result, strictjson.Limits{})
	if err != nil || v.Kind() != strictjson.Object {
		return result
	}
	old, ok := v.Get("_meta")
	if !ok || old.Kind() != strictjson.Object {
		return result
	}
	for it := old.Iter(); it.Next(); {
		if isReceiptMember(it.Member().Key) {
			return rewriteMeta(result, nil)
		}
	}
	return result
}

func isReceiptMember(key string) bool {
	return key == receipt.MetaKey || key == receipt.RequestMetaKey || key == receipt.ResponseMetaKey
}

// rewriteMeta returns result with add first in its _meta, followed by the
// members it had but those named as receipt members (an upstream cannot
// plant a receipt), every other byte as it was. A result that is not a
// JSON object is returned as it is.
func rewriteMeta(result json.RawMessage, add []metaMember) json.RawMessage {
	v, err := strictjson.Parse(result, strictjson.Limits{})
	if err != nil || v.Kind() != strictjson.Object {
		return result
	}
	return rewriteMetaOf(result, v, add)
}

// rewriteMetaOf is rewriteMeta of result, parsed as v (an object).
func rewriteMetaOf(result json.RawMessage, v strictjson.Value, add []metaMember) json.RawMessage {
	var meta []byte
	meta = append(meta, '{')
	for _, m := range add {
		if len(meta) > 1 {
			meta = append(meta, ',')
		}
		meta, _ = strictjson.AppendCanonicalString(meta, m.key)
		meta = append(meta, ':')
		meta = append(meta, m.value...)
	}
	old, ok := v.Get("_meta")
	if ok && old.Kind() == strictjson.Object {
		for it := old.Iter(); it.Next(); {
			m := it.Member()
			if isReceiptMember(m.Key) {
				continue
			}
			if len(meta) > 1 {
				meta = append(meta, ',')
			}
			meta, _ = strictjson.AppendCanonicalString(meta, m.Key)
			meta = append(meta, ':')
			meta = append(meta, result[m.Value.Start():m.Value.End()]...)
		}
	}
	meta = append(meta, '}')
	out := make([]byte, 0, len(result)+len(meta)+16)
	if ok { // replace the old _meta value
		out = append(out, result[:old.Start()]...)
		out = append(out, meta...)
		return append(out, result[old.End():]...)
	}
	at := v.Start() + 1 // just inside the result's opening brace
	out = append(out, result[:at]...)
	out = append(out, `"_meta":`...)
	out = append(out, meta...)
	if v.Len() > 0 {
		out = append(out, ',')
	}
	return append(out, result[at:]...)
}
