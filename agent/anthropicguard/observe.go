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
// It reads JSON responses (BetaToolRunner) and streams of server-sent
// events (BetaToolRunnerStreaming: the tool_use blocks of a streamed
// message, as it is read, once its message_stop arrives). The response
// reaches the runner unchanged.
func (g *Guard) Observe() option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err != nil || res == nil || res.StatusCode != http.StatusOK {
			return res, err
		}
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			res.Body = &eventTap{ReadCloser: res.Body, g: g, drafts: map[int]*draft{}}
			return res, err
		}
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
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

// maxEventLine bounds a line of an event stream the tap reads: a longer
// one (no event of the Messages API carries that much at once) is passed
// on unread.
const maxEventLine = 1 << 20

// eventTap reads the tool_use blocks of a streamed message as the runner
// reads the stream: each block's id and name from its content_block_start,
// its input from its input_json_delta events; at message_stop they are
// the blocks the next tool calls are matched to.
type eventTap struct {
	io.ReadCloser
	g      *Guard
	line   []byte // the line under way
	long   bool   // the line under way is longer than maxEventLine
	drafts map[int]*draft
	order  []int // the tool_use blocks' indexes, in order
}

// draft is a tool_use block being streamed.
type draft struct {
	id, name string
	input    strings.Builder
}

func (t *eventTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.feed(p[:n])
	return n, err
}

// feed splits what was read into lines.
func (t *eventTap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.add(b)
			return
		}
		t.add(b[:i])
		if !t.long {
			t.event(bytes.TrimSuffix(t.line, []byte("\r")))
		}
		t.line, t.long = t.line[:0], false
		b = b[i+1:]
	}
}

func (t *eventTap) add(b []byte) {
	if t.long || len(t.line)+len(b) > maxEventLine {
		t.line, t.long = t.line[:0], true
		return
	}
	t.line = append(t.line, b...)
}

// event reads one line of the stream: the data of an event.
func (t *eventTap) event(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	var ev struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"content_block"`
		Delta struct {
			Type        string `json:"type"`
			PartialJSON string `json:"partial_json"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		t.drafts, t.order = map[int]*draft{}, nil
	case "content_block_start":
		if ev.ContentBlock.Type == "tool_use" && ev.ContentBlock.ID != "" {
			t.drafts[ev.Index] = &draft{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			t.order = append(t.order, ev.Index)
		}
	case "content_block_delta":
		if d := t.drafts[ev.Index]; d != nil && ev.Delta.Type == "input_json_delta" {
			d.input.WriteString(ev.Delta.PartialJSON)
		}
	case "message_stop":
		var uses []toolUse
		for _, i := range t.order {
			d := t.drafts[i]
			in := d.input.String()
			if strings.TrimSpace(in) == "" {
				in = "{}" // a block streamed without input deltas keeps its empty input
			}
			uses = append(uses, toolUse{d.id, d.name, compact(json.RawMessage(in))})
		}
		if len(uses) > 0 {
			t.g.uses.set(uses)
		}
	}
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
