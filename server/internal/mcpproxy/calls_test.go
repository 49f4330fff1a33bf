package mcpproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/agentpreflight/preflight/agent/tools"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawClient speaks Streamable HTTP by hand, so that tests choose the
// request ids and batch requests (protocol 2025-03-26 allows batches).
type rawClient struct {
	t   testing.TB
	url string
	sid string
	hc  *http.Client
}

// rawSession initializes a session at url.
func rawSession(t testing.TB, url string) *rawClient {
	t.Helper()
	c := &rawClient{t: t, url: url, hc: &http.Client{Timeout: 60 * time.Second}}
	resp, err := c.post(context.Background(), `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	readAnswers(resp)
	if c.sid == "" {
		t.Fatal("no session id")
	}
	resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c
}

func (c *rawClient) post(ctx context.Context, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	}
	return c.hc.Do(req)
}

// rawAnswer is a JSON-RPC response as the client sees it.
type rawAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// exchange posts body and returns every response in the answer, by id.
func (c *rawClient) exchange(body string) map[string]rawAnswer {
	c.t.Helper()
	resp, err := c.post(context.Background(), body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return readAnswers(resp)
}

// readAnswers reads the JSON-RPC responses of an SSE or JSON answer.
func readAnswers(resp *http.Response) map[string]rawAnswer {
	defer resp.Body.Close()
	out := map[string]rawAnswer{}
	add := func(b []byte) {
		var many []rawAnswer
		if json.Unmarshal(b, &many) != nil {
			var one rawAnswer
			if json.Unmarshal(b, &one) != nil {
				return
			}
			many = []rawAnswer{one}
		}
		for _, a := range many {
			if a.ID != nil && (a.Result != nil || a.Error != nil) {
				out[string(a.ID)] = a
			}
		}
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		add(b)
		return out
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			add([]byte(d))
		}
	}
	return out
}

func callBody(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// TestProxyUpstreamIDs: a client whose ids are those the proxy once used
// upstream ("preflight-proxy-1") or equal the proxy's counter (1, "1",
// 2) gets each rawAnswer under its own id, and nothing hangs. The first call
// comes before any tools/list, so the proxy lists on its own behalf.
func TestProxyUpstreamIDs(t *testing.T) {
	up, counts := httpUpstream(t)
	url, _ := startProxy(t, HTTPDialer(up, nil), *mcptest.ScriptGuard())
	c := rawSession(t, url)
	got := c.exchange(`[` + callBody(`"preflight-proxy-1"`, mcptest.Quote, `{"symbol":"A"}`) + `,` +
		callBody(`1`, mcptest.Quote, `{"symbol":"B"}`) + `,` +
		callBody(`"1"`, mcptest.Quote, `{"symbol":"C"}`) + `,` +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"},` +
		`{"jsonrpc":"2.0","id":"2","method":"ping"}]`)
	for id, want := range map[string]string{`"preflight-proxy-1"`: `"A"`, `1`: `"B"`, `"1"`: `"C"`} {
		a, ok := got[id]
		if !ok || a.Result == nil || len(a.Result.Content) != 1 || !strings.Contains(a.Result.Content[0].Text, want) {
			t.Errorf("id %s: %+v; want the quote of %s", id, a, want)
		}
	}
	if _, ok := got[`2`]; !ok {
		t.Errorf("tools/list with id 2 got no rawAnswer")
	}
	if a, ok := got[`"2"`]; !ok || a.Error != nil {
		t.Errorf("ping with id \"2\": %+v", a)
	}
	if n := counts.Get(mcptest.Quote); n != 3 {
		t.Errorf("market_quote ran %d times, want 3", n)
	}
}

// TestProxyCallsInFlightBounded: a batch of 30,000 identical calls of a
// tool that never answers gets 30,000 answers: the 8 the bound per session
// admits end at the call timeout, the rest are refused at once with the
// error naming the bound and its flag, and the proxy's goroutines stay
// bounded.
func TestProxyCallsInFlightBounded(t *testing.T) {
	up, counts := httpUpstream(t)
	p := New(Options{Dial: HTTPDialer(up, nil), Guard: *mcptest.ScriptGuard(), MaxCallsInFlightPerSession: 8, MaxCallsInFlight: 12, MaxBatch: 30000,
		CallTimeout: 2 * time.Second})
	ts := httptest.NewServer(p)
	t.Cleanup(func() { p.Close(); ts.Close() })
	c := rawSession(t, ts.URL)
	c.exchange(`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`)
	const n = 30000
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(callBody(fmt.Sprint(i+1), mcptest.Countdown, `{"n":0}`))
	}
	b.WriteByte(']')
	var peak int
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				peak = max(peak, runtime.NumGoroutine())
			}
		}
	})
	before := runtime.NumGoroutine()
	got := c.exchange(b.String())
	close(stop)
	wg.Wait()
	refused, timedOut := 0, 0
	for _, a := range got {
		switch {
		case a.Error != nil && strings.Contains(a.Error.Message, "--max-calls-in-flight-per-session") && a.Error.Code == CodeLimit:
			refused++
		case a.Error != nil && strings.Contains(a.Error.Message, "--call-timeout") && a.Error.Code == CodeLimit:
			timedOut++
		}
	}
	t.Logf("%d answers: %d timed out, %d refused; goroutines %d before, peak %d; countdown ran %d times",
		len(got), timedOut, refused, before, peak, counts.Get(mcptest.Countdown))
	// At least the 8 the bound admits time out; on a loaded machine the
	// batch may still be arriving when they end, and a few more are
	// admitted into the freed places: never more than 8 at once.
	if len(got) != n || timedOut < 8 || timedOut > 64 || refused != n-timedOut {
		t.Errorf("%d answers, %d timed out, %d refused; want %d answers, 8 (a few more on a slow machine) timed out, the rest refused", len(got), timedOut, refused, n)
	}
	if peak-before > 200 {
		t.Errorf("goroutines peaked %d above the baseline; want the 30,000 calls bounded (under 200)", peak-before)
	}
	waitFor(t, "no call counted in flight", func() bool { return p.b.inFlight.Load() == 0 })
	waitFor(t, "every timed-out execution cancelled upstream", func() bool {
		return counts.Get(mcptest.Countdown+" cancelled") == counts.Get(mcptest.Countdown)
	})

	// The bound across sessions: 12 held by two sessions, the 13th refused.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := counts.Get(mcptest.Countdown)
	var hold sync.WaitGroup
	for k, cl := range []*rawClient{rawSession(t, ts.URL), rawSession(t, ts.URL)} {
		for i := range 6 {
			hold.Go(func() { // distinct arguments: none coalesces
				resp, err := cl.post(ctx, callBody(fmt.Sprint(i+1), mcptest.Countdown, fmt.Sprintf(`{"n":0,"call":%d}`, k*6+i)))
				if err == nil {
					readAnswers(resp)
				}
			})
		}
	}
	waitFor(t, "12 calls in flight", func() bool { return p.b.inFlight.Load() == 12 })
	// Counted in flight by the proxy is not yet running upstream: the
	// cancellations counted below need the tools started.
	waitFor(t, "12 calls running upstream", func() bool { return counts.Get(mcptest.Countdown)-ran == 12 })
	base := counts.Get(mcptest.Countdown + " cancelled")
	a := rawSession(t, ts.URL).exchange(callBody("1", mcptest.Quote, `{"symbol":"Z"}`))["1"]
	if a.Error == nil || !strings.Contains(a.Error.Message, "--max-calls-in-flight)") {
		t.Errorf("the 13th call across sessions: %+v; want the --max-calls-in-flight refusal", a)
	}
	cancel()
	hold.Wait()
	waitFor(t, "the dropped calls to be cancelled upstream", func() bool { return counts.Get(mcptest.Countdown+" cancelled")-base == 12 })
	waitFor(t, "no call in flight", func() bool { return p.b.inFlight.Load() == 0 })
}

// TestProxyCallTimeout: a call the upstream never answers ends at the call
// timeout with the error naming the flag, the upstream is told
// (notifications/cancelled ends the tool), and the session can still
// spend its whole budget.
func TestProxyCallTimeout(t *testing.T) {
	up, counts := httpUpstream(t)
	p := New(Options{Dial: HTTPDialer(up, nil), Guard: *mcptest.ScriptGuard(), CallTimeout: 300 * time.Millisecond})
	ts := httptest.NewServer(p)
	t.Cleanup(func() { p.Close(); ts.Close() })
	cs := connect(t, ts.URL, "2025-11-25")
	start := time.Now()
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Countdown, Arguments: map[string]any{"n": 0}})
	if err == nil || !strings.Contains(err.Error(), "--call-timeout") {
		t.Fatalf("hung call: %v; want the --call-timeout error", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the hung call took %v; want about the 300ms timeout", el)
	}
	waitFor(t, "the upstream tool to be cancelled", func() bool { return counts.Get(mcptest.Countdown+" cancelled") == 1 })
	// 4 quotes at 0.10 within the 0.45 budget: all run.
	for i := range 4 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": fmt.Sprint("S", i)}})
		if err != nil || res.IsError {
			t.Fatalf("quote %d after the timeout: %v %+v", i, err, res)
		}
	}
	if n := counts.Get(mcptest.Quote); n != 4 {
		t.Errorf("market_quote ran %d times, want 4", n)
	}
}

// TestProxyResultBound: a result over MaxResultBytes is answered with the
// error naming the flag, over an HTTP upstream answering in SSE or in
// JSON and over stdio, and the session goes on.
func TestProxyResultBound(t *testing.T) {
	srv, _ := mcptest.NewServer("")
	sse := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer sse.Close()
	js := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	defer js.Close()
	for _, tc := range []struct {
		name string
		dial Dialer
	}{
		{"http sse", HTTPDialer(sse.URL, nil)},
		{"http json", HTTPDialer(js.URL, nil)},
		{"stdio", CommandDialer(toolServer(t))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Options{Dial: tc.dial, Guard: *mcptest.ScriptGuard(), MaxResultBytes: 1 << 20})
			ts := httptest.NewServer(p)
			defer func() { p.Close(); ts.Close() }()
			cs := connect(t, ts.URL, "2025-11-25")
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Big, Arguments: map[string]any{"mb": 8}})
			if err == nil || !strings.Contains(err.Error(), "--max-result-bytes") {
				t.Fatalf("8 MiB result: %v; want the --max-result-bytes error", err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "AFTER"}})
			if err != nil || res.IsError {
				t.Fatalf("the session after the refused result: %v %+v", err, res)
			}
			// A result under the bound passes.
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Big, Arguments: map[string]any{"mb": 0}}); err != nil {
				t.Fatalf("empty big_result: %v", err)
			}
		})
	}
}

// TestProxyHungRequestHoldsNothing: a request other than tools/call that
// the upstream never answers (a prompt here) does not hold the session's
// other messages, ends at the call timeout with the error naming the
// flag, and is cancelled upstream.
func TestProxyHungRequestHoldsNothing(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hang", Version: "1"}, nil)
	cancelled := make(chan struct{}, 1)
	srv.AddPrompt(&mcp.Prompt{Name: "wait"}, func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()
	p := New(Options{Dial: HTTPDialer(up.URL, nil), CallTimeout: time.Second})
	ts := httptest.NewServer(p)
	defer func() { p.Close(); ts.Close() }()
	cs := connect(t, ts.URL, "2025-11-25")
	hung := make(chan error, 1)
	go func() {
		_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "wait"})
		hung <- err
	}()
	time.Sleep(100 * time.Millisecond)                                       // the prompt is in flight
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a guard against a hang
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("a call behind a hung request: %v %+v", err, res)
	}
	select {
	case err := <-hung:
		if err == nil || !strings.Contains(err.Error(), "--call-timeout") {
			t.Errorf("the hung prompts/get: %v; want the --call-timeout error", err)
		}
	case <-time.After(20 * time.Second): // a guard against a hang
		t.Fatal("the hung prompts/get never ended")
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second): // a guard against a hang
		t.Fatal("the upstream prompt was never cancelled")
	}
	waitFor(t, "no request counted in flight", func() bool { return p.b.inFlight.Load() == 0 })
}

// TestProxyCancelledCallsCountAgainstRetryCap: a call the client cancels
// once it is running upstream has an outcome nobody saw, and the tool may
// have done its work. For a tool that is not read-only it is not run
// again: within the tool's idempotency window its repeats are withheld
// saying the outcome is unknown; with the window off, it counts against
// the retry cap, so a client that cancels every call it sends cannot run a
// side effect without limit (with retry cap 1: one run, then withheld
// with RETRY_CAP_REACHED).
func TestProxyCancelledCallsCountAgainstRetryCap(t *testing.T) {
	for _, tc := range []struct {
		window, want string
	}{
		{"", "outcome of an identical call of countdown is unknown"},
		{"0", "already failed in a way that will repeat"},
	} {
		t.Run("idempotencySeconds="+tc.window, func(t *testing.T) {
			up, counts := httpUpstream(t)
			g := *mcptest.ScriptGuard()
			// countdown with n 0 runs until it is cancelled: here it stands for a
			// slow tool with a side effect.
			g.Specs = append(g.Specs, tools.Spec{Operation: preflight.Operation{Name: mcptest.Countdown, Effects: preflight.EffectsSideEffecting},
				RetryCap: "1", IdempotencySeconds: json.Number(tc.window)})
			p := New(Options{Dial: HTTPDialer(up, nil), Guard: g})
			ts := httptest.NewServer(p)
			t.Cleanup(func() { p.Close(); ts.Close() })
			cs := connect(t, ts.URL, "2025-11-25")
			var withheld []string
			for i := range 5 {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				var res *mcp.CallToolResult
				var err error
				go func() {
					defer close(done)
					res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Countdown, Arguments: map[string]any{"n": 0}})
				}()
				select {
				case <-done: // not run: answered at once
				case <-waitUntil(func() bool { return counts.Get(mcptest.Countdown) > i }):
					cancel()
					<-done
				}
				cancel()
				// The proxy records how the call ended once the upstream request is
				// given up; the next identical call is decided after that.
				waitFor(t, "the call to end in the proxy", func() bool { return p.b.inFlight.Load() == 0 })
				if err == nil && res.IsError {
					withheld = append(withheld, res.Content[0].(*mcp.TextContent).Text)
				}
			}
			if got := counts.Get(mcptest.Countdown); got != 1 {
				t.Errorf("the cancelled side-effecting call ran %d times with retry cap 1; want 1", got)
			}
			if len(withheld) != 4 || !strings.Contains(withheld[0], tc.want) {
				t.Errorf("withheld answers %q; want 4 saying %q", withheld, tc.want)
			}
		})
	}
}

// waitUntil returns a channel closed once cond holds (checked every few
// milliseconds for at most 30 s, a guard against a hang).
func waitUntil(cond func() bool) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for deadline := time.Now().Add(30 * time.Second); !cond() && time.Now().Before(deadline); {
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return ch
}

// TestProxyRefusedInitializeEndsItsSession: an initialize the downstream
// transport refuses (here for a protocol-version header it does not take)
// gives the client no session id, so its session and upstream connection
// end at once instead of holding a slot until the init timeout; and a
// server/discover without an id, to a proxy with no UpstreamURL for the
// stateless revision, is answered with valid JSON: UnsupportedProtocolVersion
// naming the revisions of initialize.
func TestProxyRefusedInitializeEndsItsSession(t *testing.T) {
	up, _ := httpUpstream(t)
	p := New(Options{Dial: HTTPDialer(up, nil), Guard: *mcptest.ScriptGuard()})
	ts := httptest.NewServer(p)
	t.Cleanup(func() { p.Close(); ts.Close() })
	post := func(body string, header ...string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		"Mcp-Protocol-Version", "2026-07-28")
	if status < 400 {
		t.Fatalf("initialize with a protocol-version header the transport refuses: %d %s; want a 4xx", status, body)
	}
	waitFor(t, "the refused session to end", func() bool { return p.Sessions() == 0 })

	status, body = post(`{"jsonrpc":"2.0","method":"server/discover"}`)
	var msg struct {
		ID    any `json:"id"`
		Error struct{ Code int }
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.ID != nil || msg.Error.Code != mcp.CodeUnsupportedProtocolVersion {
		t.Errorf("server/discover without an id: %d %s (%v); want a -32022 error with id null", status, body, err)
	}
}

// TestProxyCallsInFlightPerClient: the sessions of one remote address
// together hold at most MaxCallsInFlightPerClient calls, so a client that
// leaves calls hanging cannot take the whole of MaxCallsInFlight from
// another address (found by review: 8 sessions of 32 hung calls shut out
// every other client for the call timeout).
func TestProxyCallsInFlightPerClient(t *testing.T) {
	up, counts := httpUpstream(t)
	p := New(Options{Dial: HTTPDialer(up, nil), Guard: *mcptest.ScriptGuard(),
		MaxCallsInFlightPerSession: 6, MaxCallsInFlightPerClient: 10, MaxCallsInFlight: 30})
	ts := httptest.NewServer(p)
	t.Cleanup(func() { p.Close(); ts.Close() })
	from := func(ip string) *mcp.ClientSession {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Skipf("cannot connect from %s (a loopback address this machine may not route): %v", ip, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a1, a2 := from("127.0.0.1"), from("127.0.0.1")
	for i := range 10 {
		cs := a1
		if i%2 == 1 {
			cs = a2
		}
		go cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.Countdown, Arguments: map[string]any{"n": 0, "k": i}})
	}
	waitFor(t, "10 hung calls running upstream", func() bool { return counts.Get(mcptest.Countdown) == 10 })
	_, err := a1.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "A"}})
	if err == nil || !strings.Contains(err.Error(), "--max-calls-in-flight-per-client") {
		t.Fatalf("an 11th call from the same address: %v; want the per-client bound", err)
	}
	b := from("127.0.0.2")
	res, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptest.Quote, Arguments: map[string]any{"symbol": "B"}})
	if err != nil || res.IsError {
		t.Fatalf("a call from another address: %v %+v; want it run", err, res)
	}
	cancel()
	waitFor(t, "no call counted in flight", func() bool { return p.b.inFlight.Load() == 0 })
}

// TestProxyHoldsMessagesUntilTheStreamOpens: the server's notifications
// during a call go to the client's standalone GET stream, which a client
// opens only after initialize; those sent before it opens are held and
// delivered once it does, in order, rather than lost (found by the MCP
// conformance suite: an elicitation during an early call never arrived).
func TestProxyHoldsMessagesUntilTheStreamOpens(t *testing.T) {
	up, _ := httpUpstream(t)
	p := New(Options{Dial: HTTPDialer(up, nil), Guard: *mcptest.ScriptGuard()})
	ts := httptest.NewServer(p)
	t.Cleanup(func() { p.Close(); ts.Close() })
	c := rawSession(t, ts.URL)
	got := c.exchange(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"tok"},"name":"` + mcptest.Countdown + `","arguments":{"n":3}}}`)
	if a, ok := got["7"]; !ok || a.Result == nil || a.Result.IsError {
		t.Fatalf("countdown: %+v", got)
	}
	// Now the client opens its stream: the three progress notifications
	// sent while it was closed arrive on it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var progress []float64
	sc := bufio.NewScanner(resp.Body)
	for len(progress) < 3 && sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var n struct {
			Method string
			Params struct {
				ProgressToken string
				Progress      float64
			}
		}
		if json.Unmarshal([]byte(d), &n) == nil && n.Method == "notifications/progress" && n.Params.ProgressToken == "tok" {
			progress = append(progress, n.Params.Progress)
		}
	}
	if d := cmp.Diff([]float64{1, 2, 3}, progress); d != "" {
		t.Errorf("progress on the stream once opened (-want +got):\n%s", d)
	}
}
