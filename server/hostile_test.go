package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Hostile input over HTTP. The library-level cases (and their benchmarks)
// are in ../hostile_test.go; here each reaches the handler through a real
// loopback server and must get the stated status and error code, the same
// through both routes and through MCP where it applies.

// hostileBodies are documents at and just past the limits, each with the
// answer it must get on its route.
func hostileBodies() []struct {
	name, path, body string
	status           int
	code             string // error.code of a 400
} {
	const check, tool = "/check-request", "/v0.2/preflight/tool-call"
	checkWith := func(body, schema string) string {
		return `{"request":{"method":"POST","url":"https://api.example.com/x","body":` + body + `},"schema":` + schema + `}`
	}
	deep := func(levels int) string { // the whole check document nests levels deep
		n := levels - 2
		return checkWith(strings.Repeat("[", n)+strings.Repeat("]", n), `{}`)
	}
	nodes := func(n int) string { // a tool-call body of exactly n nodes: toolAllow has 12, "pad" 1
		return strings.Replace(toolAllow, `"max_results":5`, `"max_results":5,"pad":[`+strings.TrimSuffix(strings.Repeat("0,", n-13), ",")+`]`, 1)
	}
	history := func(n int) string {
		entries := make([]string, n)
		for i := range entries {
			entries[i] = fmt.Sprintf(`{"toolCallId":"c%d","fingerprint":"%s","outcome":"transient_failure","ageSeconds":1}`, i, strings.Repeat("f", 500))
		}
		return strings.Replace(toolAllow, `"budget"`, `"history":[`+strings.Join(entries, ",")+`],"budget"`, 1)
	}
	return []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"65536 bytes of [ on check", check, strings.Repeat("[", MaxBodyBytes), 400, "limit_exceeded"},
		{"65536 bytes of [ on tool call", tool, strings.Repeat("[", MaxBodyBytes), 400, "limit_exceeded"},
		{"65537 bytes of [", check, strings.Repeat("[", MaxBodyBytes+1), 413, "payload_too_large"},
		{"check nested 511 levels", check, deep(511), 200, ""},
		{"check nested 512 levels", check, deep(512), 200, ""},
		{"check nested 513 levels", check, deep(513), 400, "limit_exceeded"},
		{"tool call of 10,000 nodes", tool, nodes(10000), 200, ""},
		{"tool call of 10,001 nodes", tool, nodes(10001), 400, "limit_exceeded"},
		{"100 history entries, 500-char fingerprints", tool, history(100), 200, ""},
		{"101 history entries", tool, history(101), 400, "limit_exceeded"},
		{"1e400 in a body", check, checkWith(`{"n":1e400}`, `{}`), 200, ""},
		{"1e400 in a payload (a block)", tool, strings.Replace(toolAllow, `"max_results":5`, `"max_results":1e400`, 1), 200, ""},
		{"-0 in a body", check, checkWith(`{"n":-0}`, `{"properties":{"n":{"maximum":0}}}`), 200, ""},
		{"-0 as a budget", tool, strings.Replace(toolAllow, `"remainingUsd":1`, `"remainingUsd":-0`, 1), 200, ""},
		{"invalid UTF-8", check, checkWith("\"\xff\"", `{}`), 400, "invalid_json"},
		{"lone high surrogate", check, checkWith(`"\ud800"`, `{}`), 400, "invalid_json"},
		{"lone low surrogate", tool, strings.Replace(toolAllow, `"run-1"`, `"\udfff"`, 1), 400, "invalid_json"},
		{"duplicate key in a body", check, checkWith(`{"a":1,"a":2}`, `{}`), 400, "invalid_json"},
		{"duplicate key in a payload", tool, strings.Replace(toolAllow, `"max_results":5`, `"max_results":5,"query":"x"`, 1), 400, "invalid_json"},
		{"repetition bomb", check, checkWith(`"a"`, `{"pattern":"(((a{100}){100}){100})"}`), 400, "unsupported_pattern"},
		{"32 KiB of (?:a|b){1000}", check, checkWith(`"a"`, `{"pattern":"`+strings.Repeat(`(?:a|b){1000}`, 2400)+`"}`), 400, "unsupported_pattern"},
		{"huge literal pattern", check, checkWith(`"a"`, `{"pattern":"`+strings.Repeat("a", 32000)+`"}`), 400, "unsupported_pattern"},
		{"pattern at the cap", check, checkWith(`"aaa"`, `{"pattern":"(?:a?){1000}"}`), 200, ""},
	}
}

func TestHostileBodiesHTTP(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	for _, tc := range hostileBodies() {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			x := c.do("POST", tc.path, []byte(tc.body), "Content-Type: application/json")
			if x.Status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", x.Status, tc.status, x.Body)
			}
			if tc.code != "" {
				if got := envelopeCode(x.Body); got != tc.code {
					t.Errorf("error.code %q, want %q: %.300s", got, tc.code, x.Body)
				}
			}
		})
	}
}

// TestHostileBodiesMCP sends the same documents as tool arguments: a 200
// on the HTTP route is a result, a 400 is an isError result with the same
// envelope code, and a body too large for HTTP is too large for /mcp too.
func TestHostileBodiesMCP(t *testing.T) {
	ts := httptest.NewServer(New(testConfig))
	t.Cleanup(ts.Close)
	for _, tc := range hostileBodies() {
		if !json.Valid([]byte(tc.body)) || !strings.HasPrefix(tc.body, "{") {
			continue // not an argument object: the MCP transport refuses it before any tool runs
		}
		t.Run(tc.name, func(t *testing.T) {
			tool := "check_request"
			if tc.path != "/check-request" {
				tool = "preflight_tool_call"
			}
			msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + tc.body + `}}`
			status, _, body := mcpPost(t, ts, nil, msg)
			if len(msg) > MaxBodyBytes {
				if status != 413 {
					t.Errorf("a %d-byte message: status %d, want 413", len(msg), status)
				}
				return
			}
			if status != 200 {
				t.Fatalf("status %d: %.300s", status, body)
			}
			res := mcpWireResult(t, body)
			if res.IsError != (tc.status != 200) {
				t.Fatalf("isError %v for an HTTP %d: %.300s", res.IsError, tc.status, body)
			}
			if tc.code != "" {
				if got := envelopeCode(res.StructuredContent); got != tc.code {
					t.Errorf("error.code %q, want %q", got, tc.code)
				}
			}
		})
	}
}

// envelopeCode returns error.code of an error envelope, or "".
func envelopeCode(b []byte) string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(b, &env)
	return env.Error.Code
}

// countingHandler counts the request body bytes h reads, across requests.
type countingHandler struct {
	h    http.Handler
	read atomic.Int64
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = &countingBody{ReadCloser: r.Body, n: &c.read}
	c.h.ServeHTTP(w, r)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// timedServer starts h on a loopback server with the given read timeouts,
// as the binary configures its http.Server (with shorter values so the
// test is quick).
func timedServer(t *testing.T, h http.Handler, readHeader, read time.Duration) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ReadHeaderTimeout = readHeader
	ts.Config.ReadTimeout = read
	ts.Config.ErrorLog = nil
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// TestEndlessChunkedBody streams a chunked body that never ends as fast as
// the connection takes it: the answer is 413 once 65,536 bytes are read,
// and the handler reads at most one byte more than that.
func TestEndlessChunkedBody(t *testing.T) {
	for _, path := range []string{"/check-request", "/v0.2/preflight/tool-call", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			ch := &countingHandler{h: New(testConfig)}
			ts := timedServer(t, ch, 5*time.Second, 30*time.Second)
			conn, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(time.Minute)) // a failsafe, not an assertion
			head := "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
				"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var sent atomic.Int64
			go func() {
				chunk := fmt.Sprintf("%x\r\n%s\r\n", 4096, strings.Repeat(" ", 4096))
				io.WriteString(conn, fmt.Sprintf("%x\r\n[\r\n", 1))
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := io.WriteString(conn, chunk); err != nil {
						return
					}
					sent.Add(4096)
				}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			close(stop)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 413 || envelopeCode(body) != "payload_too_large" {
				t.Errorf("got %d %s, want 413 payload_too_large", resp.StatusCode, body)
			}
			if got := ch.read.Load(); got > MaxBodyBytes+1 {
				t.Errorf("the handler read %d body bytes, more than %d", got, MaxBodyBytes+1)
			}
			t.Logf("client had written %d bytes when the 413 arrived; the handler read %d", sent.Load(), ch.read.Load())
		})
	}
}

// TestSlowBodyCutByReadTimeout covers bodies that stall: a chunked body
// that trickles forever and a Content-Length that promises more than is
// sent (the connection stays open). Each ends when the server's
// ReadTimeout expires: a 400 invalid_json (the body could not be read; /mcp
// shares the reader and the code) or a closed
// connection, never an evaluated request and never a hang. The binary sets
// ReadTimeout to 30 s; the test uses 1 s.
func TestSlowBodyCutByReadTimeout(t *testing.T) {
	const readTimeout = time.Second
	tests := []struct {
		name  string
		head  string
		first string
		drip  string // sent every 100 ms until the server gives up; "" sends nothing more
	}{
		{"chunked trickle that never ends", "POST /check-request HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", "1\r\n{\r\n", "1\r\n \r\n"},
		{"Content-Length longer than the body", "POST /v0.2/preflight/tool-call HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n", `{"runId":`, ""},
		{"Content-Length longer, trickled", "POST /check-request HTTP/1.1\r\nHost: t\r\nContent-Length: 60000\r\n\r\n", `{"request":`, " "},
		{"MCP chunked trickle", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n", "1\r\n{\r\n", "1\r\n \r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := timedServer(t, New(testConfig), readTimeout, readTimeout)
			status, body, elapsed := stalledExchange(t, ts.Listener.Addr().String(), tc.head+tc.first, tc.drip)
			// One answer on every route and transport: 400 invalid_json
			// with a message that names no socket address.
			switch {
			case status == 0: // closed without an answer
			case status == 400 && envelopeCode(body) == "invalid_json":
				if socketAddress.Match(body) || bytes.Contains(body, []byte("tcp")) {
					t.Errorf("the answer carries a socket address: %s", body)
				}
			default:
				t.Errorf("got %d %s, want 400 invalid_json or a closed connection", status, body)
			}
			t.Logf("ended after %v (ReadTimeout %v): status %d", elapsed.Round(time.Millisecond), readTimeout, status)
		})
	}
}

// socketAddress matches an IPv4 address with a port, as in Go's network
// errors ("read tcp 127.0.0.1:18080->127.0.0.1:54890: i/o timeout").
var socketAddress = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+|\[[0-9a-f:]+\]:\d+`)

// stalledExchange writes first, then drip every 100 ms, and returns the
// status and body of the answer (0 when the server closed without one) and
// how long it took.
func stalledExchange(t *testing.T, addr, first, drip string) (int, []byte, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Minute)) // a failsafe, not an assertion
	start := time.Now()
	if _, err := io.WriteString(conn, first); err != nil {
		t.Fatal(err)
	}
	if drip != "" {
		defer startDrip(conn, drip, 100*time.Millisecond)()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, time.Since(start)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, bytes.TrimSpace(body), time.Since(start)
}
