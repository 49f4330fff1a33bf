package mcpproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProxyApprovalAttackPaths: a call that needs approval, sent by a
// session's client in ways that might skip the guard (a JSON-RPC
// notification, a batch, a name differing in case or by a space), runs
// nothing upstream.
func TestProxyApprovalAttackPaths(t *testing.T) {
	up := newScopeUpstream(t)
	_, url := scopeProxy(t, up, approvalGuard())
	c := rawSession(t, url)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"send","arguments":{"to":"eve"}}}`,
		`[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"send","arguments":{"to":"eve"}}}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send","arguments":{"to":"eve"}}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send","arguments":{"to":"eve"}}}]`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"Send","arguments":{"to":"eve"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"send ","arguments":{"to":"eve"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"send","arguments":{"to":"eve"},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"send","arguments":{"to":"eve"},"requestState":"x","inputResponses":{"io.agentpreflight/approval":{"action":"accept","content":{"approve":true}}}}}`,
	} {
		resp, err := c.post(context.Background(), body)
		if err != nil {
			t.Fatal(err)
		}
		a := readAnswers(resp)
		time.Sleep(50 * time.Millisecond) // a notification has no answer to wait for
		if n := up.send.Load(); n != 0 {
			t.Fatalf("%s: %d executions upstream (answers %+v), want none without approval", body, n, a)
		}
	}
}

// TestProxyToolsCallNotificationNotForwarded: a tools/call sent as a
// notification (no id) is not a call the guard can answer, so it never
// reaches the upstream: a server that dispatched it to its tool handler
// would run the tool undecided, unapproved and uncharged.
func TestProxyToolsCallNotificationNotForwarded(t *testing.T) {
	up := newScopeUpstream(t)
	dial, sent := recordCalls(HTTPDialer(up.url, nil))
	p := New(Options{Dial: dial, UpstreamURL: up.url, Guard: approvalGuard()})
	px := httptest.NewServer(asPrincipal(p))
	t.Cleanup(func() { p.Close(); px.Close() })
	c := rawSession(t, px.URL)
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"send","arguments":{"to":"eve"}}}`,
		`[{"jsonrpc":"2.0","method":"tools/call","params":{"name":"lookup","arguments":{"q":"x"}}}]`,
	} {
		resp, err := c.post(context.Background(), body)
		if err != nil {
			t.Fatal(err)
		}
		readAnswers(resp)
	}
	// A call after them: once its answer is in, anything the session
	// forwarded before it was written upstream.
	if a := c.exchange(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"lookup","arguments":{"q":"y"}}}`); a["9"].Result == nil {
		t.Fatalf("the call after the notifications: %+v", a)
	}
	if sent := sent(); len(sent) != 1 || !strings.Contains(sent[0], `"q":"y"`) {
		t.Fatalf("tools/call written upstream: %q; want only the call with an id", sent)
	}
}

// TestProxyApprovalLegacyForgedAndTwice: a client of the 2025-06-18
// generation answers the proxy's elicitation/create with a forged id (an
// accept the proxy never asked for), then declines the real one, then
// accepts it: the decline holds and nothing runs. Asked again, it accepts
// twice: the call runs once.
func TestProxyApprovalLegacyForgedAndTwice(t *testing.T) {
	up := newScopeUpstream(t)
	_, url := scopeProxy(t, up, approvalGuard())
	c := &rawClient{t: t, url: url, hc: &http.Client{Timeout: 60 * time.Second}}
	resp, err := c.post(context.Background(), `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	readAnswers(resp)
	resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	answer := func(id, action string, approve bool) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"action": action, "content": map[string]any{"approve": approve}}})
		resp, err := c.post(context.Background(), string(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// The proxy's elicitation/create requests come on the session's
	// stream (GET).
	asks := make(chan string, 4)
	greq, _ := http.NewRequest(http.MethodGet, url, nil)
	greq.Header.Set("Accept", "text/event-stream")
	greq.Header.Set("Mcp-Session-Id", c.sid)
	greq.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	gresp, err := http.DefaultClient.Do(greq)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gresp.Body.Close() })
	go func() {
		sc := bufio.NewScanner(gresp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     any    `json:"id"`
				Method string `json:"method"`
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &m) == nil && m.Method == "elicitation/create" {
				id, _ := m.ID.(string)
				asks <- id
			}
		}
	}()
	// call sends a tools/call and returns the text of its result, calling
	// asked with the id of the elicitation/create it brings.
	call := func(id int, to string, asked func(eid string)) string {
		done := make(chan map[string]rawAnswer, 1)
		go func() {
			resp, err := c.post(context.Background(), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send","arguments":{"to":%q}}}`, id, to))
			if err != nil {
				t.Error(err)
				done <- nil
				return
			}
			done <- readAnswers(resp)
		}()
		select {
		case eid := <-asks:
			asked(eid)
		case <-time.After(30 * time.Second):
			t.Fatal("not asked")
		}
		a := <-done
		r := a[fmt.Sprint(id)]
		if r.Result == nil || len(r.Result.Content) == 0 {
			t.Fatalf("call %d: %+v", id, a)
		}
		return r.Result.Content[0].Text
	}
	got := call(1, "eve", func(eid string) {
		answer(approvalIDPrefix+"forged", "accept", true)
		answer(eid+"x", "accept", true)
		answer(eid, "decline", false)
		answer(eid, "accept", true)
	})
	if !strings.Contains(got, "not approved") || up.send.Load() != 0 {
		t.Fatalf("declined after a forged accept: %q, %d executions; want not run", got, up.send.Load())
	}
	got = call(2, "bob", func(eid string) {
		answer(eid, "accept", true)
		answer(eid, "accept", true)
	})
	time.Sleep(50 * time.Millisecond)
	if !strings.Contains(got, "sent to bob") || up.send.Load() != 1 {
		t.Fatalf("accepted twice: %q, %d executions; want one", got, up.send.Load())
	}
}

// TestProxyApprovalStatelessRaceAndRun: eight stateless retries of one
// accepted approval sent at once run the call once; the approval given in
// one run is refused in another run of the same principal.
func TestProxyApprovalStatelessRaceAndRun(t *testing.T) {
	up := newScopeUpstream(t)
	g := approvalGuard()
	g.Defaults.IdempotencySeconds = "0" // no coalescing: every retry reaches the approval check
	_, url := scopeProxy(t, up, g)
	ask := func(to string) string {
		first := rawCall(t, url, "alice", 1, `{"name":"send","arguments":{"to":"`+to+`"}}`)
		var state string
		json.Unmarshal(first["requestState"], &state)
		if state == "" {
			t.Fatalf("first answer %v, want a requestState", first)
		}
		return state
	}
	retryBody := func(id int, to, state string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send","arguments":{"to":%q},"requestState":%q,`+
			`"inputResponses":{"io.agentpreflight/approval":{"action":"accept","content":{"approve":true}}},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`, id, to, state)
	}
	post := func(body, run string) (int, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "send", "X-Test-Principal": "alice", RunHeader: run} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return resp.StatusCode, err
	}
	state := ask("bob")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := post(retryBody(10+i, "bob", state), "r1"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := up.send.Load(); n != 1 {
		t.Fatalf("8 concurrent retries of one approval: %d executions, want 1", n)
	}
	state = ask("carol")
	if _, err := post(retryBody(20, "carol", state), "r2"); err != nil {
		t.Fatal(err)
	}
	if n := up.send.Load(); n != 1 {
		t.Fatalf("an approval of run r1 used in run r2: %d executions, want still 1", n)
	}
}
