package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLoopbackHost(t *testing.T) {
	tests := []struct {
		host string
		want bool
		why  string
	}{
		{"localhost", true, "the name"},
		{"localhost:8090", true, "with a port"},
		{"LOCALHOST", true, "names are case-insensitive"},
		{"LocalHost:8090", true, "mixed case with a port"},
		{"localhost.", true, "one trailing dot: the absolute name"},
		{"localhost.:8090", true, "absolute name with a port"},
		{"localhost..", false, "two trailing dots name nothing"},
		{"localhost.evil.com", false, "a foreign name under localhost"},
		{"evil.com", false, "a foreign name"},
		{"127.0.0.1:8090", true, "loopback IPv4"},
		{"127.1.2.3", true, "all of 127/8 is loopback"},
		{"[::1]:8090", true, "loopback IPv6 with a port"},
		{"[::1]", true, "loopback IPv6 without a port"},
		{"[::ffff:127.0.0.1]", true, "IPv4-mapped loopback"},
		{"[fe80::1%25lo]", false, "a zone is not a loopback name"},
		{"10.0.0.1", false, "not loopback"},
		{"", false, "no Host"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := loopbackHost(tt.host); got != tt.want {
				t.Errorf("loopbackHost(%q) = %v, want %v (%s)", tt.host, got, tt.want, tt.why)
			}
		})
	}
}

func TestClientOf(t *testing.T) {
	tests := []struct{ remote, want string }{
		{"127.0.0.1:5555", "127.0.0.1"},
		{"203.0.113.7:80", "203.0.113.7"},
		{"[::ffff:203.0.113.7]:80", "203.0.113.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:443", "fe80::/64"},
		{"[::1]:1", "::/64"},
		{"@", "@"}, // not an IP address (a Unix socket): kept as it is
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.RemoteAddr = tt.remote
		if got := clientOf(r); got != tt.want {
			t.Errorf("clientOf(%q) = %q, want %q", tt.remote, got, tt.want)
		}
	}
}

func TestNormalizeOrigin(t *testing.T) {
	tests := []struct {
		in, want string // want "" means refused
		why      string
	}{
		{"https://app.example.com", "https://app.example.com", "canonical already"},
		{"HTTPS://App.Example.COM", "https://app.example.com", "scheme and host are case-insensitive"},
		{"https://app.example.com:443", "https://app.example.com", "the default port is the same origin"},
		{"http://app.example.com:80", "http://app.example.com", "the default port is the same origin"},
		{"http://localhost:3000", "http://localhost:3000", "a port is part of the origin"},
		{"https://app.example.com:80", "https://app.example.com:80", "another scheme's default port is kept"},
		{"http://[::1]:8080", "http://[::1]:8080", "IPv6"},
		{"https://app.example.com/", "https://app.example.com", "a lone slash"},
		{"https://app.example.com/x", "", "a path"},
		{"https://app.example.com?q", "", "a query"},
		{"https://user@app.example.com", "", "user info"},
		{"https://app.example.com:", "", "an empty port"},
		{"https://app.example.com:x", "", "a port that is not a number"},
		{"ftp://app.example.com", "", "not a web scheme"},
		{"app.example.com", "", "no scheme"},
		{"null", "", "an opaque origin"},
		{"", "", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := NormalizeOrigin(tt.in)
			if tt.want == "" {
				if err == nil {
					t.Errorf("NormalizeOrigin(%q) = %q, want an error (%s)", tt.in, got, tt.why)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q (%s)", tt.in, got, err, tt.want, tt.why)
			}
		})
	}
}

func TestJSONContent(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"Application/JSON":                  true,
		"text/plain":                        false,
		"text/plain; charset=utf-8":         false,
		"application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x":   false,
		"application/jsonx":                 false,
		"":                                  false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Content-Type", ct)
		if got := jsonContent(r); got != want {
			t.Errorf("jsonContent(%q) = %v, want %v", ct, got, want)
		}
	}
}

const initBody = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// answer is one HTTP answer of the proxy.
type answer struct {
	Status     int
	RetryAfter string
	Body       string // a JSON-RPC error, compacted; "" for another body
}

// rpcPost posts body to url with the given headers and returns the answer
// and the session id it assigned.
func rpcPost(t *testing.T, c *http.Client, url, body string, hdr map[string]string) (answer, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a := answer{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	var b bytes.Buffer
	if json.Compact(&b, data) == nil && bytes.Contains(data, []byte(`"error"`)) {
		a.Body = b.String()
	}
	return a, resp.Header.Get(sessionHeader)
}

// fromAddr is an HTTP client whose connections come from the loopback
// address ip, another client as the proxy sees it.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 30 * time.Second}
}

func serveProxy(t *testing.T, opts Options) (string, *Proxy) {
	t.Helper()
	p := New(opts)
	ts := httptest.NewServer(p)
	t.Cleanup(func() { p.Close(); ts.Close() })
	return ts.URL + "/mcp", p
}

func limitErr(id, msg string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":"` + msg + `"}}`
}

func requestErr(msg string) string {
	return `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"` + msg + `"}}`
}

// TestOriginAndContentType: a web page's simple cross-origin POST
// (text/plain, no preflight) is refused twice over, a disallowed Origin
// with application/json gets 403, an allowed one (in any case, with the
// default port spelled out), a loopback one and none at all are served.
func TestOriginAndContentType(t *testing.T) {
	up, _ := httpUpstream(t)
	url, _ := serveProxy(t, Options{Dial: HTTPDialer(up, nil), AllowOrigins: []string{"https://app.example.com"}})
	originRefused := func(o string) answer {
		return answer{Status: 403, Body: requestErr(`Origin \"` + o + `\" is not allowed (allow it with --allow-origin)`)}
	}
	tests := []struct {
		name string
		hdr  map[string]string
		want answer
	}{
		{"cross-origin simple POST", map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, originRefused("https://evil.example")},
		{"same page, text/plain", map[string]string{"Content-Type": "text/plain;charset=UTF-8"},
			answer{Status: 415, Body: requestErr(`Content-Type \"text/plain;charset=UTF-8\" is not application/json`)}},
		{"form POST", map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
			answer{Status: 415, Body: requestErr(`Content-Type \"application/x-www-form-urlencoded\" is not application/json`)}},
		{"disallowed origin, JSON", map[string]string{"Origin": "https://evil.example"}, originRefused("https://evil.example")},
		{"allowed origin on another port", map[string]string{"Origin": "https://app.example.com:8443"}, originRefused("https://app.example.com:8443")},
		{"opaque origin", map[string]string{"Origin": "null"}, originRefused("null")},
		{"allowed origin", map[string]string{"Origin": "https://app.example.com"}, answer{Status: 200}},
		{"allowed origin, other spelling", map[string]string{"Origin": "HTTPS://APP.example.com:443"}, answer{Status: 200}},
		{"no origin", nil, answer{Status: 200}},
		// A page of the user's own machine is not DNS rebinding (the MCP
		// conformance suite's dns-rebinding-protection scenario sends the
		// proxy's own loopback origin and wants it served).
		{"loopback origin", map[string]string{"Origin": "http://127.0.0.1:8090"}, answer{Status: 200}},
		{"localhost origin, any case", map[string]string{"Origin": "http://LocalHost:3000"}, answer{Status: 200}},
		{"IPv6 loopback origin", map[string]string{"Origin": "http://[::1]:8090"}, answer{Status: 200}},
		{"a foreign name under localhost", map[string]string{"Origin": "http://localhost.evil.example"}, originRefused("http://localhost.evil.example")},
		{"JSON with charset", map[string]string{"Content-Type": "application/json; charset=utf-8"}, answer{Status: 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := rpcPost(t, nil, url, initBody, tt.hdr)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
		})
	}
}

// TestSessionBounds: past MaxSessionsPerClient a client gets 429, past
// MaxSessions anyone gets 503, each with the request's id, Retry-After and
// the flag to change; a session that ends gives its room back.
func TestSessionBounds(t *testing.T) {
	up, _ := httpUpstream(t)
	url, p := serveProxy(t, Options{Dial: HTTPDialer(up, nil), MaxSessions: 3, MaxSessionsPerClient: 2})
	a, b, c := fromAddr("127.0.0.1"), fromAddr("127.0.0.2"), fromAddr("127.0.0.3")
	var ids []string
	for _, cl := range []*http.Client{a, a, b} {
		got, id := rpcPost(t, cl, url, initBody, nil)
		if got.Status != 200 || id == "" {
			t.Fatalf("initialize: %+v, session %q", got, id)
		}
		ids = append(ids, id)
	}
	perClient := answer{429, "5", limitErr("7", "per-client session limit reached: this address has 2 sessions open (set by --max-sessions-per-client); end one (DELETE) or retry later")}
	full := answer{503, "5", limitErr("7", "session limit reached: 3 sessions are open (set by --max-sessions); retry later")}
	if got, _ := rpcPost(t, a, url, initBody, nil); !cmp.Equal(perClient, got) {
		t.Errorf("third session of one client (-want +got):\n%s", cmp.Diff(perClient, got))
	}
	if got, _ := rpcPost(t, c, url, initBody, nil); !cmp.Equal(full, got) {
		t.Errorf("fourth session (-want +got):\n%s", cmp.Diff(full, got))
	}
	if n := p.Sessions(); n != 3 {
		t.Fatalf("%d sessions open, want 3", n)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set(sessionHeader, ids[0])
	if resp, err := a.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	waitFor(t, "the ended session's room", func() bool { return p.Sessions() == 2 })
	if got, _ := rpcPost(t, a, url, initBody, nil); got.Status != 200 {
		t.Errorf("after a DELETE: %+v, want 200", got)
	}
}

// TestInitTimeout: a session that sends nothing after initialize ends
// after InitTimeout even though IdleTimeout is long; one that does stays.
func TestInitTimeout(t *testing.T) {
	up, _ := httpUpstream(t)
	url, p := serveProxy(t, Options{Dial: HTTPDialer(up, nil), InitTimeout: 200 * time.Millisecond, IdleTimeout: time.Hour})
	_, silent := rpcPost(t, nil, url, initBody, nil)
	_, talking := rpcPost(t, nil, url, initBody, nil)
	if got, _ := rpcPost(t, nil, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		map[string]string{sessionHeader: talking, "Mcp-Protocol-Version": "2025-11-25"}); got.Status != 202 {
		t.Fatalf("notifications/initialized: %+v", got)
	}
	waitFor(t, "the silent session's end", func() bool { return !p.HasSession(silent) })
	time.Sleep(400 * time.Millisecond) // twice the timeout
	if !p.HasSession(talking) {
		t.Fatal("a session that sent a request after initialize was ended by the init timeout")
	}
}

// TestBodyTimeout: a POST whose body stalls gets 408 once BodyTimeout
// passes and its connection is closed; a GET stream is not cut by it.
func TestBodyTimeout(t *testing.T) {
	up, _ := httpUpstream(t)
	url, _ := serveProxy(t, Options{Dial: HTTPDialer(up, nil), BodyTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", addr)
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	took := time.Since(start)
	want := answer{Status: 408, Body: limitErr("null", "request body not received within 300ms (set by --body-timeout)")}
	var b bytes.Buffer
	json.Compact(&b, data)
	if d := cmp.Diff(want, answer{Status: resp.StatusCode, Body: b.String()}); d != "" {
		t.Errorf("answer (-want +got):\n%s", d)
	}
	if took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("answered after %v; want soon after the 300ms body timeout", took)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the 408 the connection reads %v, want EOF (closed)", err)
	}

	// A GET stream outlives the body timeout.
	_, id := rpcPost(t, nil, url, initBody, nil)
	rpcPost(t, nil, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{sessionHeader: id, "Mcp-Protocol-Version": "2025-11-25"})
	g, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	fmt.Fprintf(g, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", addr, id)
	g.SetDeadline(time.Now().Add(10 * time.Second))
	gr := bufio.NewReader(g)
	gresp, err := http.ReadResponse(gr, nil)
	if err != nil || gresp.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", gresp, err)
	}
	time.Sleep(900 * time.Millisecond) // three body timeouts
	g.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := io.Copy(io.Discard, gr); !os.IsTimeout(err) {
		t.Errorf("the GET stream after three body timeouts reads to %v; want it still open (a read timeout)", err)
	}
}

// TestDrain: once draining, every request gets 503 with Retry-After and
// a JSON-RPC error; open sessions stay until Close.
func TestDrain(t *testing.T) {
	up, _ := httpUpstream(t)
	url, p := serveProxy(t, Options{Dial: HTTPDialer(up, nil)})
	_, id := rpcPost(t, nil, url, initBody, nil)
	if err := p.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := answer{503, "5", limitErr("null", "the proxy is shutting down; retry later")}
	for _, hdr := range []map[string]string{nil, {sessionHeader: id}} {
		if got, _ := rpcPost(t, nil, url, initBody, hdr); !cmp.Equal(want, got) {
			t.Errorf("while draining (-want +got):\n%s", cmp.Diff(want, got))
		}
	}
	if p.Sessions() != 1 {
		t.Errorf("%d sessions while draining, want the 1 open before", p.Sessions())
	}
}

// TestSessionIDNotLogged: the logs carry a digest of a session id, never
// the id, at every level.
func TestSessionIDNotLogged(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewJSONHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(b)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	up, _ := httpUpstream(t)
	url, p := serveProxy(t, Options{Dial: HTTPDialer(up, nil), Logger: log, InitTimeout: 100 * time.Millisecond})
	_, id := rpcPost(t, nil, url, initBody, nil)
	waitFor(t, "the session's end", func() bool { return p.Sessions() == 0 })
	waitFor(t, "the end's log line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), "session ended")
	})
	mu.Lock()
	logs := buf.String()
	mu.Unlock()
	if strings.Contains(logs, id) {
		t.Errorf("the session id %s is in the logs:\n%s", id, logs)
	}
	if n := strings.Count(logs, `"session":"`+logID(id)+`"`); n < 3 {
		t.Errorf("the digest %s is in %d log lines, want start, timeout and end:\n%s", logID(id), n, logs)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestMaxProcesses: with a command upstream, at most MaxProcesses
// processes live at once; a session's process counts until it has exited.
func TestMaxProcesses(t *testing.T) {
	bin := toolServer(t)
	url, p := serveProxy(t, Options{Dial: CommandDialer(bin), MaxProcesses: 2})
	var ids []string
	for range 2 {
		got, id := rpcPost(t, nil, url, initBody, nil)
		if got.Status != 200 {
			t.Fatalf("initialize: %+v", got)
		}
		ids = append(ids, id)
	}
	if n := countProcesses(t, bin); n != 2 {
		t.Errorf("%d tool server processes, want 2", n)
	}
	want := answer{503, "5", limitErr("7", "upstream process limit reached: 2 upstream processes are running (set by --max-processes); retry later")}
	if got, _ := rpcPost(t, fromAddr("127.0.0.2"), url, initBody, nil); !cmp.Equal(want, got) {
		t.Errorf("third process (-want +got):\n%s", cmp.Diff(want, got))
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set(sessionHeader, ids[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(t, "the ended session's process slot", func() bool {
		got, _ := rpcPost(t, nil, url, initBody, nil)
		return got.Status == 200
	})
	if n := countProcesses(t, bin); n > 2 {
		t.Errorf("%d tool server processes, want at most 2", n)
	}
	p.Close()
	if n := countProcesses(t, bin); n != 0 {
		t.Errorf("%d tool server processes after Close, want 0", n)
	}
}

// countProcesses counts the live processes running bin (Linux /proc).
func countProcesses(t *testing.T, bin string) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/exe")
	if err != nil || len(dirs) == 0 {
		t.Skip("no /proc to count processes")
	}
	n := 0
	for _, d := range dirs {
		if exe, err := os.Readlink(d); err == nil && exe == bin {
			if st, err := os.ReadFile(filepath.Join(filepath.Dir(d), "stat")); err == nil && !bytes.Contains(st, []byte(") Z ")) {
				n++
			}
		}
	}
	return n
}

func TestBatchLen(t *testing.T) {
	tests := []struct {
		name string
		body string
		want int // with a limit of 3
	}{
		{"one message", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 1},
		{"leading white space", " \n\t[{\"id\":1},{\"id\":2}]", 2},
		{"commas inside messages", `[{"a":[1,2,3],"b":{"c":1,"d":2}}]`, 1},
		{"commas and brackets in strings", `[{"s":"a,b],[c\",d"},{"t":"\\"}]`, 2},
		{"three", `[1,2,3]`, 3},
		{"past the limit stops counting", `[1,2,3,4,5,6,7,8]`, 4},
		{"not JSON is one message", `garbage,,,`, 1},
		{"unterminated", `[1,2`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := batchLen([]byte(tt.body), 3); got != tt.want {
				t.Errorf("batchLen(%s, 3) = %d, want %d", tt.body, got, tt.want)
			}
		})
	}
}

// TestMaxProcessesCountsTheBridge: the stateless bridge's process counts
// against MaxProcesses as a session's does: a stateless request that needs
// it while the bound is full gets 503, and once it runs an initialize past
// the bound gets 503.
func TestMaxProcessesCountsTheBridge(t *testing.T) {
	bin := toolServer(t)
	url, p := serveProxy(t, Options{Dial: CommandDialer(bin), MaxProcesses: 2})
	list := `{` + statelessMeta + `}`
	var ids []string
	for range 2 {
		got, id := rpcPost(t, nil, url, initBody, nil)
		if got.Status != 200 {
			t.Fatalf("initialize: %+v", got)
		}
		ids = append(ids, id)
	}
	status, msgs := statelessPost(t, url, "tools/list", "", list, 3)
	msg := "upstream process limit reached: 2 upstream processes are running (set by --max-processes); retry later"
	if status != http.StatusServiceUnavailable || len(msgs) != 1 || fmt.Sprint(msgs[0]["error"]) != fmt.Sprint(map[string]any{"code": -32000.0, "message": msg}) {
		t.Fatalf("stateless request with 2 sessions' processes running: HTTP %d %v, want 503 and %q", status, msgs, msg)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set(sessionHeader, ids[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(t, "the ended session's process slot for the bridge", func() bool {
		status, _ := statelessPost(t, url, "tools/list", "", list, 4)
		return status == http.StatusOK
	})
	want := answer{503, "5", limitErr("7", msg)}
	if got, _ := rpcPost(t, fromAddr("127.0.0.2"), url, initBody, nil); !cmp.Equal(want, got) {
		t.Errorf("initialize with a session's and the bridge's processes running (-want +got):\n%s", cmp.Diff(want, got))
	}
	if n := countProcesses(t, bin); n != 2 {
		t.Errorf("%d tool server processes, want 2 (a session's and the bridge's)", n)
	}
	p.Close()
	if n := countProcesses(t, bin); n != 0 {
		t.Errorf("%d tool server processes after Close, want 0", n)
	}
}
