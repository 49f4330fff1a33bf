package mcpproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent/mcpguard"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireAnswer is an HTTP answer as the client receives it, but for the
// request id header, which differs on every request.
type wireAnswer struct {
	Status int
	Header http.Header
	Body   string
}

// postRaw posts body in c's session and returns the answer as received.
func postRaw(t *testing.T, c *rawClient, body string) wireAnswer {
	t.Helper()
	resp, err := c.post(context.Background(), body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	h := resp.Header.Clone()
	// The framing may differ, the bytes may not: the direct path lets
	// net/http send a small answer with its length, where the transport's
	// flush makes it chunked.
	for _, k := range []string{"Date", "X-Request-Id", "Content-Length"} {
		h.Del(k)
	}
	return wireAnswer{resp.StatusCode, h, string(b)}
}

// TestFastPathSameWire checks that a tools/call served on the direct path
// answers the client byte for byte as one served through the downstream
// transport: each call goes once in a body the direct path takes and once
// in one it leaves to the transport (a \u escape in the arguments, which
// both read as the same call), each in a session of its own (a run of its
// own), with ids and the session's own names made equal.
func TestFastPathSameWire(t *testing.T) {
	up, counts := httpUpstream(t)
	url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
	for _, c := range []struct {
		name, tool, fast, slow string
		runs                   int // upstream runs of the tool per call
	}{
		{"runs", mcptest.Quote, `{"symbol":"ABC"}`, `{"symbol":"\u0041BC"}`, 1},
		{"invalid arguments", mcptest.Quote, `{"ticker":"A"}`, `{"ticker":"\u0041"}`, 0},
		{"tool error", mcptest.Flaky, `{"q":"ABC"}`, `{"q":"\u0041BC"}`, 1},
		{"unknown tool", "no_such_tool", `{"q":"ABC"}`, `{"q":"\u0041BC"}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got [2]wireAnswer
			for i, args := range []string{c.fast, c.slow} {
				body := callBody(`7`, c.tool, args)
				if (fastRequest([]byte(body)) != nil) != (i == 0) {
					t.Fatalf("%s: the direct path takes it: %v, want %v", body, i != 0, i == 0)
				}
				rc := rawSession(t, url)
				postRaw(t, rc, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
				before := counts.Snapshot()[c.tool]
				got[i] = postRaw(t, rc, body)
				if n := counts.Snapshot()[c.tool] - before; n != c.runs {
					t.Errorf("%s: ran upstream %d times, want %d", body, n, c.runs)
				}
				got[i].Body = strings.ReplaceAll(got[i].Body, rc.sid, "SESSION")
			}
			// The guard's call ids and times differ from call to call.
			norm := regexp.MustCompile(`"(callId|at|startedAt|endedAt|requestHash|receipt|id|digest)":"[^"]*"`)
			for i := range got {
				got[i].Body = norm.ReplaceAllString(got[i].Body, `"$1":"…"`)
			}
			if diff := cmp.Diff(got[1], got[0]); diff != "" {
				t.Errorf("direct path (+) against the transport's (-):\n%s", diff)
			}
			if !strings.HasPrefix(got[0].Body, "event: message\ndata: ") {
				t.Errorf("answer %q is not one message event", got[0].Body)
			}
		})
	}
}

// TestFastPathRefusesWhatItCannotRead checks that a tools/call whose
// params cannot be read as one call is refused, never forwarded
// unguarded, whichever path serves it.
func TestFastPathRefusesWhatItCannotRead(t *testing.T) {
	up, counts := httpUpstream(t)
	url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
	rc := rawSession(t, url)
	rc.exchange(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	for i, params := range []string{
		`null`,
		`[]`,
		`"market_quote"`,
		`{"name":5,"arguments":{"symbol":"A"}}`,
		`{"name":"market_quote","arguments":"symbol=A"}`,
		`{"name":"market_quote","arguments":{"symbol":"A"},"name":"ticket_open"}`,
		`{"name":"market_quote","Name":"ticket_open","arguments":{"symbol":"A"}}`,
		`{"name":"market_quote","arguments":{"symbol":"A","symbol":"B"}}`,
	} {
		body := `{"jsonrpc":"2.0","id":` + string(rune('a'+i)) + `0,"method":"tools/call","params":` + params + `}`
		body = strings.Replace(body, `"id":`+string(rune('a'+i))+`0`, `"id":"c`+string(rune('a'+i))+`"`, 1)
		before := counts.Snapshot()
		answers := rc.exchange(body)
		after := counts.Snapshot()
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("%s ran upstream (-before +after):\n%s", params, diff)
		}
		a, ok := answers[`"c`+string(rune('a'+i))+`"`]
		switch {
		case !ok:
			t.Errorf("%s: no answer in %v", params, answers)
		case a.Error == nil && (a.Result == nil || !a.Result.IsError):
			t.Errorf("%s: answered as a call that ran: %+v", params, a.Result)
		}
	}
}

// TestFastPathResumesTheCallStream checks that a call whose upstream
// stream ends before the result (the server closed it, keeping its
// events) is resumed with Last-Event-ID, as the SDK's client transport
// resumes it, and gets its result.
func TestFastPathResumesTheCallStream(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "resumable", Version: "1"}, nil)
	var ran atomic.Int64
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			time.Sleep(100 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}))
	t.Cleanup(ts.Close)
	url, _ := startProxy(t, HTTPDialer(ts.URL, nil), mcpguard.Options{})
	cs := connect(t, url, "2025-11-25")
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "done" || res.IsError {
		t.Fatalf("result %+v, want the tool's", res)
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}

func TestSendingSummary(t *testing.T) {
	for _, m := range []string{"tools/call", "tools/list", `odd "method"`, ""} {
		if got, want := sendingSummary(m), fmt.Sprintf("sending %q", m); got != want {
			t.Errorf("sendingSummary(%q) = %q, want %q", m, got, want)
		}
	}
}
