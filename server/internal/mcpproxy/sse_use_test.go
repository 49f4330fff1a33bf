package mcpproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The streams of the tests of sseReader's three users.
const (
	progressEvent = `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}` + "\n\n"
	answerEvent   = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"isError\":false}}\r\n\r\n"
	namedEvent    = "event: ping\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/ping\"}\n\n"
)

// bigEvent is an event past eventBound(max) in lines each within max.
func bigEvent(max int64) string {
	line := "data: " + strings.Repeat("b", int(max)-8) + "\n"
	return strings.Repeat(line, int(eventBound(max)/max)+2) + "\n"
}

// summarize describes messages for comparison: a method or an id, with
// the error of a response.
func summarize(msgs []jsonrpc.Message) []string {
	var out []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *jsonrpc.Request:
			out = append(out, m.Method)
		case *jsonrpc.Response:
			s := "response " + string(mustJSON(m.ID.Raw()))
			if m.Error != nil {
				s += ": " + m.Error.Error()
			}
			out = append(out, s)
		}
	}
	return out
}

// TestReadCallEvents checks what the direct path makes of its call
// stream: the messages it delivers and the error that ends it, the SDK
// client transport's in each case.
func TestReadCallEvents(t *testing.T) {
	const max = 4096
	for _, c := range []struct {
		name, stream string
		want         []string
		err          string // the connection's failure; "" for none
	}{
		{name: "comments, a named event, the answer", stream: ": hi\n\n" + progressEvent + namedEvent + answerEvent + "data: after\n\n",
			want: []string{"notifications/progress", "response 7"}},
		{name: "ends before the answer", stream: progressEvent + "data: ",
			want: []string{"notifications/progress", "response 7: request terminated without response"}},
		{name: "answer at the end without a blank line", stream: strings.TrimRight(answerEvent, "\r\n"),
			want: []string{"response 7"}},
		{name: "line without colon", stream: progressEvent + "data\n\n" + answerEvent, want: []string{"notifications/progress"},
			err: `sending "tools/call": malformed event: malformed line in SSE stream: "data"`},
		{name: "event past the bound", stream: bigEvent(max) + answerEvent,
			err: `sending "tools/call": malformed event: SSE event exceeded 69632 bytes without terminating`},
		{name: "data not JSON-RPC", stream: "data: {\n\n" + answerEvent,
			err: `sending "tools/call": failed to decode event: `},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, _ := jsonrpc.MakeID(float64(7))
			hc := &httpConn{max: max}
			var got []jsonrpc.Message
			err := hc.readCall(context.Background(), sendingSummary("tools/call"), io.NopCloser(strings.NewReader(c.stream)), id,
				func(m jsonrpc.Message) { got = append(got, m) })
			if diff := cmp.Diff(c.want, summarize(got)); diff != "" {
				t.Errorf("delivered (-want +got):\n%s", diff)
			}
			var f *connFailure
			switch {
			case c.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case c.err != "" && (!errors.As(err, &f) || !strings.HasPrefix(err.Error(), c.err)):
				t.Errorf("error %v, want a connection failure %q", err, c.err)
			}
		})
	}
}

// TestReadEventsStandalone checks the messages the standalone stream
// delivers.
func TestReadEventsStandalone(t *testing.T) {
	const max = 4096
	for _, c := range []struct {
		name, stream string
		want         []string
	}{
		{name: "messages", stream: ": hi\n\n" + progressEvent + namedEvent + "data: not json\n\n" + strings.TrimRight(progressEvent, "\n"),
			want: []string{"notifications/progress", "notifications/progress"}},
		{name: "line without colon ends the stream", stream: progressEvent + "data\n\n" + progressEvent,
			want: []string{"notifications/progress"}},
		{name: "event past the bound ends the stream", stream: progressEvent + bigEvent(max) + progressEvent,
			want: []string{"notifications/progress"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hc := &httpConn{max: max, msgs: make(chan readResult, 16)}
			hc.readEvents(context.Background(), &http.Response{Body: io.NopCloser(strings.NewReader(c.stream))})
			close(hc.msgs)
			var got []jsonrpc.Message
			for r := range hc.msgs {
				got = append(got, r.msg)
			}
			if diff := cmp.Diff(c.want, summarize(got)); diff != "" {
				t.Errorf("delivered (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAwaitResponseStream checks what the stateless path makes of its
// call stream: what it relays, the response it returns, its errors.
func TestAwaitResponseStream(t *testing.T) {
	const max = 4096
	for _, c := range []struct {
		name, stream string
		relayed      []string
		want         string // the response's summary
		err          string
		tooLarge     bool
	}{
		{name: "comments, a named event, the answer", stream: ": hi\n\n" + progressEvent + namedEvent + answerEvent,
			relayed: []string{"notifications/progress"}, want: "response 7"},
		{name: "ends before the answer", stream: progressEvent, relayed: []string{"notifications/progress"},
			err: "the upstream's event stream ended before the result"},
		{name: "line without colon", stream: "data\n\n" + answerEvent, err: `malformed event: malformed line in SSE stream: "data"`},
		{name: "event past the bound", stream: bigEvent(max) + answerEvent, err: "malformed event: SSE event exceeded", tooLarge: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, _ := jsonrpc.MakeID(float64(7))
			resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body: io.NopCloser(strings.NewReader(c.stream))}
			var relayed []jsonrpc.Message
			res, err := awaitResponse(resp, max, id, func(b []byte) {
				m, err := jsonrpc.DecodeMessage(b)
				if err != nil {
					t.Errorf("relayed %q: %v", b, err)
				}
				relayed = append(relayed, m)
			})
			if diff := cmp.Diff(c.relayed, summarize(relayed)); diff != "" {
				t.Errorf("relayed (-want +got):\n%s", diff)
			}
			if res != nil {
				if got := summarize([]jsonrpc.Message{res})[0]; got != c.want {
					t.Errorf("response %s, want %s", got, c.want)
				}
			} else if c.want != "" {
				t.Errorf("no response, want %s", c.want)
			}
			switch {
			case c.err == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
				t.Errorf("error %v, want %q", err, c.err)
			case err != nil && tooLarge(err, max) != c.tooLarge:
				t.Errorf("error %v: too large %v, want %v", err, !c.tooLarge, c.tooLarge)
			}
		})
	}
}
