// Package rpcid says which JSON-RPC request ids the MCP Go SDK answers
// under the same id, for preflightd's /mcp and its MCP guarding proxy,
// which both serve MCP through the SDK's transport.
//
// The SDK (v1.8.0) reads a numeric id into a float64 and writes it back
// as an int64: 1.5 comes back as 1, 9007199254740993 as 9007199254740992,
// an integer past int64 as -9223372036854775808 (so two requests in flight
// can share an answer's id), and 1e400 is refused as text. A client then
// cannot match the answer to its request, which JSON-RPC 2.0 requires.
package rpcid

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Rule is the rule a refused id breaks, for the message of the error.
const Rule = "a request id must be a string or an integer from -9007199254740991 to 9007199254740991, " +
	"written without a fraction or an exponent, so that the answer carries it unchanged"

// Safe reports whether the raw JSON value id, a message's id, comes back
// unchanged in the SDK's answer: a string, null, or an integer within
// ±(2^53-1) written plainly (digits, perhaps a minus sign; not -0, which
// comes back as 0). An absent id (empty) is safe: the message is a
// notification.
func Safe(id json.RawMessage) bool {
	if len(id) == 0 || id[0] == '"' || string(id) == "null" {
		return true
	}
	digits := strings.TrimPrefix(string(id), "-")
	n, err := strconv.ParseUint(digits, 10, 64)
	return err == nil && len(digits) <= 16 && n <= 1<<53-1 && (digits[0] != '0' || string(id) == "0") // -0 comes back as 0
}

// Echo returns the id to answer a refused message under: the id as sent
// when it is a number, else null.
func Echo(id json.RawMessage) json.RawMessage {
	if len(id) > 0 && (id[0] == '-' || '0' <= id[0] && id[0] <= '9') {
		return id
	}
	return json.RawMessage("null")
}

// FirstUnsafe returns the first id of the JSON-RPC message or batch body
// that is not Safe, and whether there is one. The id is the member named
// exactly "id" (of two, the last), as the SDK reads it; "Id" and "ID" are
// not ids. A body that is not JSON, or whose messages are not objects, has
// none: the transport refuses it on its own terms.
func FirstUnsafe(body []byte) (json.RawMessage, bool) {
	var one map[string]json.RawMessage
	if json.Unmarshal(body, &one) == nil {
		return one["id"], !Safe(one["id"])
	}
	var batch []map[string]json.RawMessage
	if json.Unmarshal(body, &batch) == nil {
		for _, m := range batch {
			if !Safe(m["id"]) {
				return m["id"], true
			}
		}
	}
	return nil, false
}
