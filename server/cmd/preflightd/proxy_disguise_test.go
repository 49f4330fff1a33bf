package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpreflight/preflight/agent/mcpguard/mcptest"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestProxyRefusesDisguisedCalls replays the two budget bypasses of issue
// 30 through the built binary, against a go-sdk upstream whose tools count
// their runs: tools/call params with an extra member that encoding/json
// would fold onto "name" or "arguments" were forwarded undecided (22 priced
// calls ran on a budget of 2), or decided as one tool and run as another.
// Each is now answered with a JSON-RPC invalid-params error, and nothing
// runs; honest calls still spend exactly the budget.
func TestProxyRefusesDisguisedCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	up, counts := countingUpstream(t) // closed after the proxy is killed: it holds a stream open
	url := "http://" + startProxyBinary(t, bin, "--upstream", up, "--operations", quoteOps(t), "--budget-usd", "0.20", "--max-calls", "2").addr + "/mcp"
	s := newRawSession(t, url)

	attacks := []struct {
		name, params, refusal string
	}{
		{"Name besides name", `{"name":"market_quote","Name":1,"arguments":{"symbol":"S%d"}}`, `"name" and "Name"`},
		{"NAME names a free tool", `{"name":"market_quote","NAME":"flaky_search","arguments":{"symbol":"S%d","q":"x"}}`, `"name" and "NAME"`},
		{"ARGUMENTS besides arguments", `{"name":"market_quote","arguments":{"symbol":"A"},"ARGUMENTS":{"symbol":"S%d"}}`, `"arguments" and "ARGUMENTS"`},
		{"duplicate name", `{"name":"flaky_search","name":"market_quote","arguments":{"symbol":"S%d"}}`, `duplicate member name "name"`},
		{"failing call disguised, against the retry cap", `{"name":"create_ticket","Name":1,"arguments":{"title":"t%d"}}`, `"name" and "Name"`},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			for i := range 11 {
				resp := s.call(t, strings.Replace(a.params, "%d", strconv.Itoa(i), 1))
				if resp.Error == nil || resp.Error.Code != jsonrpc.CodeInvalidParams || !strings.Contains(resp.Error.Message, a.refusal) {
					t.Fatalf("call %d answered result %s, error %+v; want an invalid-params error saying %q", i, resp.Result, resp.Error, a.refusal)
				}
			}
		})
	}
	if d := cmp.Diff(map[string]int{}, counts.Snapshot()); d != "" {
		t.Fatalf("the upstream ran disguised calls (-want +got):\n%s", d)
	}

	// Honest calls: two distinct priced quotes fit the budget and the call
	// limit, the third is withheld; five identical failing tickets run once.
	for i := range 3 {
		s.call(t, `{"name":"market_quote","arguments":{"symbol":"H`+strconv.Itoa(i)+`"}}`)
	}
	if got := counts.Get(mcptest.Quote); got != 2 {
		t.Errorf("%d priced quotes ran on a budget of two; want 2", got)
	}
	s2 := newRawSession(t, url)
	for range 5 {
		s2.call(t, `{"name":"create_ticket","arguments":{"title":"same"}}`)
	}
	if got := counts.Get(mcptest.Ticket); got != 1 {
		t.Errorf("%d identical failing tickets ran with a retry cap of 1; want 1", got)
	}
}

// rawSession is an MCP session over Streamable HTTP that sends params as
// raw bytes, as no SDK client would.
type rawSession struct {
	url, id string
	next    int
}

func newRawSession(t *testing.T, url string) *rawSession {
	t.Helper()
	s := &rawSession{url: url}
	s.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if s.id == "" {
		t.Fatal("initialize gave no session id")
	}
	s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// call sends a tools/call with params and returns its response.
func (s *rawSession) call(t *testing.T, params string) rawResponse {
	t.Helper()
	s.next++
	body := s.post(t, `{"jsonrpc":"2.0","id":`+strconv.Itoa(s.next)+`,"method":"tools/call","params":`+params+`}`)
	var resp rawResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	return resp
}

// rawResponse is a JSON-RPC response as it came.
type rawResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends body and returns the JSON-RPC message of the answer (the
// data of the last SSE event, or the JSON body).
func (s *rawSession) post(t *testing.T, body string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s: %d %s", body, resp.StatusCode, data)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	var last []byte
	for _, line := range strings.Split(string(data), "\n") {
		if d, ok := strings.CutPrefix(line, "data:"); ok && strings.TrimSpace(d) != "" {
			last = []byte(strings.TrimSpace(d))
		}
	}
	if last == nil {
		last = data
	}
	return last
}
