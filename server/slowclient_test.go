package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSlowClients opens several connections that dribble their headers or
// their body a few bytes at a time and never finish, and while they hang
// on, a normal client makes ordinary requests: those complete, and every
// slow connection is cut off by the server's timeouts (ReadHeaderTimeout
// for headers, ReadTimeout for the body; the binary uses 5 s and 30 s, the
// test 500 ms and 1 s). The times are logged, not asserted.
func TestSlowClients(t *testing.T) {
	const readHeader, read = 500 * time.Millisecond, time.Second
	ts := timedServer(t, New(testConfig), readHeader, read)
	addr := ts.Listener.Addr().String()

	type slow struct {
		kind, first, drip string
	}
	var clients []slow
	for i := range 6 {
		clients = append(clients,
			slow{"headers", "POST /check-request HTTP/1.1\r\nHost: t\r\n", fmt.Sprintf("X-Drip-%d: a\r\n", i)},
			slow{"body", "POST /v0.2/preflight/tool-call HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{", " "},
		)
	}
	type ended struct {
		kind    string
		status  int
		elapsed time.Duration
	}
	results := make(chan ended, len(clients))
	var started sync.WaitGroup
	for _, c := range clients {
		started.Add(1)
		go func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				started.Done()
				results <- ended{c.kind, -1, 0}
				return
			}
			started.Done()
			defer conn.Close()
			status, _, elapsed := dripOn(conn, c.first, c.drip)
			results <- ended{c.kind, status, elapsed}
		}()
	}
	started.Wait()

	// The normal client is served while the slow ones hang on.
	client := ts.Client()
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/check-request", checkValid},
		{"POST", "/v0.2/preflight/tool-call", toolAllow},
		{"GET", "/health", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_request","arguments":` + checkValid + `}}`},
	} {
		req, _ := http.NewRequest(r.method, ts.URL+r.path, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("normal client, %s %s: %v", r.method, r.path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("normal client, %s %s: status %d", r.method, r.path, resp.StatusCode)
		}
	}

	longest := map[string]time.Duration{}
	for range clients {
		r := <-results
		switch {
		case r.status < 0:
			t.Errorf("%s dribbler could not connect", r.kind)
		case r.status != 0 && r.status != 400 && r.status != 408 && r.status != 431:
			t.Errorf("%s dribbler got status %d, want a closed connection or a 4xx", r.kind, r.status)
		}
		longest[r.kind] = max(longest[r.kind], r.elapsed)
	}
	t.Logf("%d header dribblers cut off within %v (ReadHeaderTimeout %v); %d body dribblers within %v (ReadTimeout %v)",
		len(clients)/2, longest["headers"].Round(time.Millisecond), readHeader,
		len(clients)/2, longest["body"].Round(time.Millisecond), read)
}

// dripOn writes first, then drip every 50 ms until the server answers or
// closes the connection; it returns the status (0 when closed without an
// answer), the body and the time taken. A two-minute deadline is a
// failsafe against a hung test, not an assertion.
func dripOn(conn net.Conn, first, drip string) (int, []byte, time.Duration) {
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	start := time.Now()
	io.WriteString(conn, first)
	defer startDrip(conn, drip, 50*time.Millisecond)()
	buf := make([]byte, 4096)
	var got []byte
	for {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	elapsed := time.Since(start)
	var status int
	fmt.Sscanf(string(got), "HTTP/1.1 %d", &status)
	return status, got, elapsed
}

// startDrip writes drip to conn every interval until the returned stop
// function is called or a write fails.
func startDrip(conn net.Conn, drip string, every time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if _, err := io.WriteString(conn, drip); err != nil {
					return
				}
			}
		}
	}()
	return func() { close(done) }
}
