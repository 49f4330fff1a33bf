package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// limitedServer serves /health behind a connLimiter of max connections
// whose pressure idle timeout is shortIdle (the ordinary one is 2 minutes),
// wired as run wires it.
func limitedServer(t *testing.T, max int, shortIdle time.Duration) (*connLimiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := newConnLimiter(ln, max, shortIdle, slog.New(slog.DiscardHandler))
	srv := &http.Server{
		Handler: rejectAmbiguousFraming(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, "ok")
		})),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ConnState:         lim.connState,
		ConnContext:       connContext,
	}
	go srv.Serve(lim)
	t.Cleanup(func() { srv.Close() })
	return lim, ln.Addr().String()
}

// keepAlive opens a connection, makes one request on it and returns it
// idle, with the status line it got ("" when the connection was closed).
func keepAlive(t *testing.T, addr string) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, ""
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, resp.Status + " " + resp.Header.Get("Retry-After")
}

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}

// waitForWaiting waits until n connections of lim wait for a request.
func waitForWaiting(t *testing.T, lim *connLimiter, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		lim.mu.Lock()
		got := lim.waiting.Len()
		lim.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections waiting, want %d", got, n)
		}
	}
}

// TestConnLimiterPressure: below 3/4 of the bound idle keep-alive
// connections keep the ordinary idle timeout; past it, every idle one is
// closed after the pressure idle timeout, and the table empties.
func TestConnLimiterPressure(t *testing.T) {
	const max = 16
	lim, addr := limitedServer(t, max, 300*time.Millisecond)
	var conns []net.Conn
	for range max * 3 / 4 {
		c, status := keepAlive(t, addr)
		if status != "200 OK " {
			t.Fatalf("connection %d: %q", len(conns), status)
		}
		conns = append(conns, c)
	}
	if closedWithin(conns[0], time.Second) {
		t.Fatal("an idle connection was closed below 3/4 of the bound")
	}
	keepAlive(t, addr) // the 13th of 16: pressure
	if !closedWithin(conns[0], 2*time.Second) {
		t.Error("an idle connection stayed open 2 s into pressure with a 300 ms pressure idle timeout")
	}
	deadline := time.Now().Add(2 * time.Second)
	for lim.open.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := lim.open.Load(); got != 0 {
		t.Errorf("%d connections still open 2 s into pressure", got)
	}
	if _, status := keepAlive(t, addr); status != "200 OK " {
		t.Errorf("after pressure: %q, want 200", status)
	}
}

// TestConnLimiterRefusesAtBound: at the bound, while every connection is
// younger than minWaitBeforeEvict, a new connection gets a raw 503
// server_busy with Retry-After and is closed.
func TestConnLimiterRefusesAtBound(t *testing.T) {
	const max = 16
	lim, addr := limitedServer(t, max, time.Minute)
	for range max {
		keepAlive(t, addr)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(c)
	want := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nContent-Length: 145\r\nConnection: close\r\n\r\n" +
		`{"error":{"code":"server_busy","message":"the server holds as many connections as it allows (16); nothing was read or charged; retry after 1 s"}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("refused connection (-want +got):\n%s", diff)
	}
	if n := lim.open.Load(); n != max {
		t.Errorf("%d open, want %d", n, max)
	}
}

// TestConnLimiterEvictsLongestIdle: at the bound with ordinary idle
// timeouts (no pressure deadline reached yet), a new connection closes the
// one idle longest, once it has waited a second.
func TestConnLimiterEvictsLongestIdle(t *testing.T) {
	const max = 16
	lim, addr := limitedServer(t, max, time.Minute)
	var conns []net.Conn
	for i := range max {
		c, _ := keepAlive(t, addr)
		conns = append(conns, c)
		// The client has its answer before net/http marks the connection
		// idle; wait for that, or the next connection (waiting from its
		// accept) could be older in the queue than this one.
		waitForWaiting(t, lim, i+1)
	}
	time.Sleep(minWaitBeforeEvict + 100*time.Millisecond)
	if _, status := keepAlive(t, addr); status != "200 OK " {
		t.Fatalf("new connection at the bound: %q, want 200 after evicting an idle one", status)
	}
	if !closedWithin(conns[0], time.Second) {
		t.Error("the longest idle connection is still open")
	}
	if got := lim.open.Load(); got != max {
		t.Errorf("%d open, want %d", got, max)
	}
}

// TestFramingScanner: a request's header section naming both
// Content-Length and Transfer-Encoding taints the connection, in any
// letter case and split across reads; the fields in different sections,
// in a body (of any bytes, by Content-Length or chunked) or in a trailer
// do not. Where the framing cannot be followed, every later line is read
// as a header line.
func TestFramingScanner(t *testing.T) {
	smuggle := "content-length: 1\ntransfer-encoding: chunked\n"
	tests := []struct {
		name  string
		reads []string
		want  bool
	}{
		{"both", []string{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"}, true},
		{"both, TE first, odd case", []string{"POST / HTTP/1.1\r\ntransfer-ENCODING: chunked\r\ncOnTeNt-LeNgTh: 5\r\n\r\n"}, true},
		{"split across reads", []string{"POST / HTTP/1.1\r\nContent-Len", "gth: 5\r\nTransfer-Enc", "oding: chunked\r\n\r\n"}, true},
		{"bare LF", []string{"POST / HTTP/1.1\nContent-Length: 5\nTransfer-Encoding: chunked\n\n"}, true},
		{"second pipelined request", []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"}, true},
		{"after a body", []string{"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloPOST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"}, true},
		{"after a chunked body", []string{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n",
			"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"}, true},
		{"Content-Length only", []string{"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"}, false},
		{"chunked only", []string{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"}, false},
		{"in two requests", []string{"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}, false},
		{"a header whose name only starts alike", []string{"POST / HTTP/1.1\r\nContent-Length-X: 5\r\nTransfer-Encoding: chunked\r\n\r\n"}, false},
		{"JSON body", []string{"POST / HTTP/1.1\r\nContent-Length: 60\r\n\r\n{\n\"content-length:\": 1,\n\"transfer-encoding:\": 2\n}"}, false},
		// A body of any bytes, then a valid request: not tainted.
		{"header lines in a body", []string{fmt.Sprintf("POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n%sPOST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", len(smuggle), smuggle)}, false},
		{"header lines in a body, split", []string{fmt.Sprintf("POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n", len(smuggle)), smuggle[:9], smuggle[9:], "GET / HTTP/1.1\r\n\r\n"}, false},
		{"header lines in chunks", []string{fmt.Sprintf("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(smuggle), smuggle)}, false},
		{"header lines in a trailer", []string{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + strings.ReplaceAll(smuggle, "\n", "\r\n") + "\r\n"}, false},
		{"a Content-Length in one section, chunked in the next, past a body", []string{"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"}, false},
		// HTTP/1.0: net/http ignores Transfer-Encoding, so what follows
		// the header section is the next request.
		{"HTTP/1.0 ignores chunked", []string{"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"}, true},
		// Framing the scanner cannot follow: net/http ends the
		// connection; the scanner reads every later line as a header
		// line.
		{"bad chunk size", []string{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + smuggle}, true},
		{"chunk size ending in a bare LF", []string{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n" + smuggle}, true},
		{"chunk data not ending in CR LF", []string{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\n" + smuggle}, true},
		{"Transfer-Encoding other than chunked", []string{"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n" + smuggle}, true},
		{"two Content-Length values", []string{"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n" + smuggle}, true},
		{"bad Content-Length", []string{"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n" + smuggle}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s framingScanner
			for _, r := range tc.reads {
				s.scan([]byte(r))
			}
			if got := s.tainted.Load(); got != tc.want {
				t.Errorf("tainted = %t, want %t", got, tc.want)
			}
			if got := framingReference(strings.Join(tc.reads, "")); got != tc.want {
				t.Errorf("framingReference = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestAmbiguousFramingClosesConnection: a request with both Content-Length
// and Transfer-Encoding is answered 400 and its connection closed, so the
// bytes after it are never read as a request (raw TCP: the read after the
// answer gets EOF). A request with one of them keeps the connection.
func TestAmbiguousFramingClosesConnection(t *testing.T) {
	_, addr := limitedServer(t, 64, time.Second)
	for _, tc := range []struct {
		name       string
		head       string
		wantStatus int
		wantClosed bool
	}{
		{"both", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, true},
		{"chunked", "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 200, false},
		{"Content-Length", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 200, false},
		// A body whose lines read like both fields, then a valid request:
		// both answered, the connection kept.
		{"header lines in a body", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 45\r\n\r\ncontent-length: 1\ntransfer-encoding: chunked\n", 200, false},
		{"header lines in chunks", "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2d\r\ncontent-length: 1\ntransfer-encoding: chunked\n\r\n0\r\n\r\n", 200, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// The smuggled request rides behind the first.
			io.WriteString(c, tc.head+"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus == 400 {
				want := `{"error":{"code":"invalid_request","message":"the request has both Content-Length and Transfer-Encoding, which frame its body two ways; send one of them (RFC 9112 section 6.1); the connection is closed"}}`
				if diff := cmp.Diff(want, string(body)); diff != "" || !resp.Close {
					t.Errorf("Connection: close %t; body (-want +got):\n%s", resp.Close, diff)
				}
			}
			next, err := http.ReadResponse(br, nil)
			if closed := err == io.EOF || (err != nil && strings.Contains(err.Error(), "EOF")); closed != tc.wantClosed {
				t.Errorf("after the answer: read error %v; want closed %t", err, tc.wantClosed)
			}
			if err == nil && next.StatusCode != http.StatusOK {
				t.Errorf("the request after it: status %d, want 200", next.StatusCode)
			}
		})
	}
}

// framingReference says whether a stream of requests holds a request
// header section naming both Content-Length and Transfer-Encoding, reading
// the whole stream at once: section by section, each body skipped by its
// framing as net/http reads it, every line read as a header line from the
// first framing it cannot follow. A section tainted before it ends counts.
func framingReference(data string) bool {
	lines := false // framing lost
	for {
		// A section: its lines up to an empty one (leading empty lines
		// skipped), or the lines ended so far.
		var section []string
		for {
			line, rest, ok := strings.Cut(data, "\n")
			if !ok {
				return taints(section)
			}
			data = rest
			line = strings.TrimSuffix(line, "\r")
			if line == "" {
				if len(section) == 0 && !lines {
					continue
				}
				break
			}
			section = append(section, line)
			if taints(section) {
				return true
			}
		}
		if lines {
			continue
		}
		// The section's framing, as net/http reads it.
		var cls, tes []string
		for _, h := range section[1:] {
			name, value, _ := strings.Cut(h, ":")
			switch strings.ToLower(name) {
			case "content-length":
				cls = append(cls, strings.Trim(value, " \t"))
			case "transfer-encoding":
				tes = append(tes, strings.Trim(value, " \t"))
			}
		}
		proto := strings.ToLower(section[0][max(len(section[0])-8, 0):]) // net/http refuses other cases
		if len(tes) > 0 && proto != "http/1.0" && !strings.HasPrefix(proto, "http/0.") {
			if len(tes) != 1 || !strings.EqualFold(tes[0], "chunked") {
				lines = true
				continue
			}
			var ok bool
			data, ok = skipChunks(data)
			lines = !ok
			continue
		}
		if len(cls) > 0 {
			n, err := strconv.ParseUint(cls[0], 10, 63)
			if err != nil || slices.ContainsFunc(cls, func(v string) bool { return v != cls[0] }) || len(cls[0]) > 20 {
				lines = true
				continue
			}
			if n > uint64(len(data)) {
				return false
			}
			data = data[n:]
		}
	}
}

// taints reports whether the lines of one section name both fields.
func taints(section []string) bool {
	var cl, te bool
	for _, h := range section {
		l := strings.ToLower(h)
		cl = cl || strings.HasPrefix(l, "content-length:")
		te = te || strings.HasPrefix(l, "transfer-encoding:")
	}
	return cl && te
}

// skipChunks returns data past a chunked body and its trailer; or, with
// false, past the bytes where the chunks go wrong (a chunk-size line, or a
// byte that should be the CR or LF after a chunk). A stream that ends
// within them is skipped whole.
func skipChunks(data string) (string, bool) {
	for {
		line, rest, ok := strings.Cut(data, "\n")
		if !ok {
			return "", true
		}
		if !strings.HasSuffix(line, "\r") || strings.Count(line, "\r") != 1 || len(line) > 64 {
			return rest, false
		}
		size, _, _ := strings.Cut(strings.TrimRight(line[:len(line)-1], " \t"), ";")
		n, err := strconv.ParseUint(size, 16, 64)
		if err != nil || len(size) > 16 || n > 1<<62 || strings.ContainsAny(size, "+-_xX") {
			return rest, false
		}
		data = rest
		if n == 0 {
			for {
				line, rest, ok := strings.Cut(data, "\n")
				if !ok {
					return "", true
				}
				data = rest
				if line == "" || line == "\r" {
					return data, true
				}
			}
		}
		switch {
		case n >= uint64(len(data)):
			return "", true
		case data[n] != '\r':
			return data[n:], false
		case n+1 == uint64(len(data)):
			return "", true
		case data[n+1] != '\n':
			return data[n+1:], false
		}
		data = data[n+2:]
	}
}

// FuzzFramingScanner: split anywhere, the scanner agrees with
// framingReference, which frames the whole stream at once (the scanner's
// own rules, written another way; FuzzFramingAgainstNetHTTP holds it to
// net/http).
func FuzzFramingScanner(f *testing.F) {
	f.Add("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", uint16(7), uint16(40))
	f.Add("GET / HTTP/1.1\r\n\r\n{\"a\":\"content-length:\"}\ntransfer-encoding:\n", uint16(3), uint16(30))
	f.Add("POST / HTTP/1.1\r\nContent-Length: 45\r\n\r\ncontent-length: 1\ntransfer-encoding: chunked\nGET / HTTP/1.1\r\n\r\n", uint16(20), uint16(70))
	f.Add("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2d;x\r\ncontent-length: 1\ntransfer-encoding: chunked\n\r\n0\r\nT: 1\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", uint16(50), uint16(100))
	f.Add("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\ncontent-length: 1\ntransfer-encoding: chunked\n", uint16(10), uint16(60))
	f.Fuzz(func(t *testing.T, data string, a, b uint16) {
		s, i, j := scanSplit(data, a, b)
		if got, want := s.tainted.Load(), framingReference(data); got != want {
			t.Errorf("tainted = %t, reference %t, for %q split at %d, %d", got, want, data, i, j)
		}
	})
}

// BenchmarkFramingScanner: the scanner's cost on a typical request (seven
// header lines, a 300-byte body), which every request read pays.
func BenchmarkFramingScanner(b *testing.B) {
	req := []byte("POST /v0.2/preflight/tool-call HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 300\r\n" +
		"Accept: application/json\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n\r\n" + strings.Repeat(`{"a":1}`, 42) + "xxxxxx")
	b.SetBytes(int64(len(req)))
	var s framingScanner
	for b.Loop() {
		s.scan(req)
	}
	if s.tainted.Load() || s.state != inHead {
		b.Fatalf("tainted %t, state %d after whole requests", s.tainted.Load(), s.state)
	}
}

// scanSplit scans data in three reads, split where a and b say, and
// returns the scanner and the split points.
func scanSplit(data string, a, b uint16) (s *framingScanner, i, j int) {
	i, j = int(a)%(len(data)+1), int(b)%(len(data)+1)
	if i > j {
		i, j = j, i
	}
	s = new(framingScanner)
	for _, part := range []string{data[:i], data[i:j], data[j:]} {
		s.scan([]byte(part))
	}
	return s, i, j
}
