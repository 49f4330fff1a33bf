package anthropicguard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/agentpreflight/preflight/agent/adapt"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// Observe returns a request option for the tool runner (NewToolRunner's
// options, or the client's) that reads the tool_use blocks of each
// response, so that a guarded runner tool knows the tool_use id of the
// call it runs, which the runner does not tell it: a withheld retry then
// names the call it repeats by the model's id.
//
//	runner := client.Beta.Messages.NewToolRunner(guard.Tools(tools...), params, guard.Observe())
//
// It reads JSON responses only: with a streaming runner the ids stay
// preflight's own. The response reaches the runner unchanged.
func (g *Guard) Observe() option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err != nil || res == nil || res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			return res, err
		}
		body, rerr := io.ReadAll(res.Body)
		res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			return res, err
		}
		var msg struct {
			Content []struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
		}
		if json.Unmarshal(body, &msg) != nil {
			return res, err
		}
		var uses []toolUse
		for _, b := range msg.Content {
			if b.Type == "tool_use" && b.ID != "" {
				uses = append(uses, toolUse{b.ID, b.Name, compact(b.Input)})
			}
		}
		if len(uses) > 0 {
			g.uses.set(uses)
		}
		return res, err
	})
}

// toolUse is a tool_use block of the last response: its id, tool name
// and input (compact JSON).
type toolUse struct{ id, name, input string }

// toolUses are the tool_use blocks of the last response not yet matched
// to a call.
type toolUses struct {
	mu   sync.Mutex
	list []toolUse
}

func (u *toolUses) set(l []toolUse) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.list = l
}

// take returns the id of the first block that calls name with input, and
// forgets it; "" when none does.
func (u *toolUses) take(name string, input json.RawMessage) string {
	in := compact(input)
	u.mu.Lock()
	defer u.mu.Unlock()
	for i, b := range u.list {
		if b.name == name && b.input == in {
			u.list = append(u.list[:i:i], u.list[i+1:]...)
			return b.id
		}
	}
	return ""
}

func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// withUseID returns ctx carrying the tool_use id of a runner call of name
// with input, when Observe saw it.
func (g *Guard) withUseID(ctx context.Context, name string, input json.RawMessage) context.Context {
	return adapt.WithCallID(ctx, &g.ids, g.uses.take(name, input))
}
