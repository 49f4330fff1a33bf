package mcpproxy

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// policyRefusal returns the refusal of a call of params that the scope's
// principal may not make, or nil.
func (p *Proxy) policyRefusal(sc *scope, params json.RawMessage) *jsonrpc.Error {
	return nil
}
