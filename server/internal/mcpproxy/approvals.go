package mcpproxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approvals in a session of a protocol generation before 2026-07-28. The
// guard asks a person's approval of a call (see mcpguard.Approvals) with
// an input_required result, which such a client never retries; for it
// the proxy sends the client an elicitation/create request of its own
// (on the session's stream, as the server's requests go) and the call
// waits for the answer, within the call timeout, nothing reserved. The
// proxy's requests carry string ids "preflight-approval-" and a random
// token, which no server's id is expected to share, and the client's
// responses to them are taken here, never forwarded upstream.

// approvalIDPrefix starts the id of each elicitation/create the proxy
// sends a client.
const approvalIDPrefix = "preflight-approval-"

// sawInitialize notes what the client's initialize declares: whether it
// can answer elicitation/create.
func (s *session) sawInitialize(params json.RawMessage) {
	var p struct {
		Capabilities struct {
			Elicitation json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
	}
	json.Unmarshal(params, &p)
	s.mu.Lock()
	s.elicits = len(p.Capabilities.Elicitation) > 0 && string(p.Capabilities.Elicitation) != "null"
	s.mu.Unlock()
}

// legacy reports whether the session negotiated a protocol version before
// 2026-07-28 (dates compare as text), whose clients do not retry
// input_required results.
func (s *session) legacy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version < "2026-07-28"
}

// errNoElicitation is why a legacy client is not asked.
var errNoElicitation = errors.New("the client did not declare the elicitation capability in its initialize")

// elicit sends the client an elicitation/create request and waits for
// its answer, until ctx ends.
func (s *session) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	s.mu.Lock()
	can := s.elicits
	s.mu.Unlock()
	if !can {
		return nil, errNoElicitation
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	key := approvalIDPrefix + rand.Text()
	id, _ := jsonrpc.MakeID(key)
	ch := make(chan *jsonrpc.Response, 1)
	s.mu.Lock()
	s.approvals[key] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.approvals, key)
		s.mu.Unlock()
	}()
	s.deliver(&jsonrpc.Request{ID: id, Method: "elicitation/create", Params: params})
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		var res mcp.ElicitResult
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return nil, errors.New("the client's answer to elicitation/create is not an elicitation result: " + err.Error())
		}
		return &res, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-s.ctx.Done():
		return nil, errors.New("the session ended")
	}
}

// approvalAnswer takes the client's response r when it answers one of
// the proxy's elicitation/create requests; false when it is another's.
func (s *session) approvalAnswer(r *jsonrpc.Response) bool {
	key, ok := r.ID.Raw().(string)
	if !ok || len(key) <= len(approvalIDPrefix) || key[:len(approvalIDPrefix)] != approvalIDPrefix {
		return false
	}
	s.mu.Lock()
	ch := s.approvals[key]
	s.mu.Unlock()
	if ch != nil {
		select {
		case ch <- r:
		default:
		}
	}
	return true
}
