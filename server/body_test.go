package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// padded returns a valid check request of exactly n bytes: checkValid with
// spaces inserted before its final brace.
func padded(t *testing.T, n int) []byte {
	t.Helper()
	pad := n - len(checkValid)
	if pad < 0 {
		t.Fatalf("cannot pad to %d bytes", n)
	}
	return []byte(checkValid[:len(checkValid)-1] + strings.Repeat(" ", pad) + "}")
}

func TestBodySizeLimit(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	tests := []struct {
		name   string
		size   int
		status int
	}{
		{"exactly the limit is read", MaxBodyBytes, 200},
		{"one byte over is refused", MaxBodyBytes + 1, 413},
		{"far over is refused", 10 * MaxBodyBytes, 413},
	}
	for _, path := range []string{"/check-request", "/v0.2/preflight/tool-call"} {
		for _, tc := range tests {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				c.t = t
				body := padded(t, tc.size)
				want := tc.status
				if path != "/check-request" && want == 200 {
					want = 400 // a check body is not a tool call; what matters is that it was read
				}
				x := c.do("POST", path, body)
				if x.Status != want {
					t.Errorf("%d-byte body: status %d, want %d: %s", len(body), x.Status, want, x.Body)
				}
				if want == 413 {
					checkGolden(t, "payload_too_large", x.render())
				}
			})
		}
	}
}

func TestChunkedOversize(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	for _, tc := range []struct {
		name   string
		size   int
		status int
	}{
		{"chunked at the limit", MaxBodyBytes, 200},
		{"chunked over the limit", 4 * MaxBodyBytes, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			body := padded(t, tc.size)
			// A reader hides the length, so the client sends the body chunked.
			req, err := http.NewRequest("POST", c.srv.URL+"/check-request", io.MultiReader(bytes.NewReader(body)))
			if err != nil {
				t.Fatal(err)
			}
			if req.ContentLength != 0 || req.TransferEncoding != nil {
				t.Fatalf("request is not chunked: length %d", req.ContentLength)
			}
			x := c.send(req, body)
			if x.Status != tc.status {
				t.Errorf("status %d, want %d: %s", x.Status, tc.status, x.Body)
			}
		})
	}
}

// rawExchange writes raw to a fresh connection to addr, closes the write
// side and returns the parsed response.
func rawExchange(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		io.WriteString(conn, raw)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestContentLengthLies(t *testing.T) {
	c := newAPIClient(t, New(testConfig))
	addr := strings.TrimPrefix(c.srv.URL, "http://")
	big := strings.Repeat("x", 2*MaxBodyBytes)
	tests := []struct {
		name     string
		raw      string
		status   int
		wantCode string
	}{
		{
			// The declared length is over the limit: refused before reading.
			name:     "declared over the limit, little sent",
			raw:      "POST /check-request HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 70000\r\n\r\n{}",
			status:   413,
			wantCode: "payload_too_large",
		},
		{
			// Only the declared 2 bytes are the body; the rest is never read as it.
			name:     "declared small, much more sent",
			raw:      "POST /check-request HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}" + big,
			status:   400,
			wantCode: "invalid_request",
		},
		{
			// The body ends early: the read fails and nothing is evaluated.
			name:     "declared larger than sent, then closed",
			raw:      "POST /v0.2/preflight/tool-call HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n{\"runId\":",
			status:   400,
			wantCode: "invalid_json",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.raw
			var resp *http.Response
			var body string
			if tc.name == "declared larger than sent, then closed" {
				resp, body = rawHalfClose(t, addr, raw)
			} else {
				resp, body = rawExchange(t, addr, raw)
			}
			if resp.StatusCode != tc.status || !strings.Contains(body, fmt.Sprintf(`"code":%q`, tc.wantCode)) {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, body, tc.status, tc.wantCode)
			}
		})
	}
}

// A chunked body that passes the limit and then stalls gets its 413 at
// once, not after the read timeout: the server must not try to drain the
// rest before answering. Without a read timeout here, draining would wait
// for ever; the deadline only bounds the failure.
func TestChunkedOversizeThenStall(t *testing.T) {
	for _, route := range []string{"/check-request", "/v0.2/preflight/tool-call", "/mcp"} {
		t.Run(route, func(t *testing.T) {
			c := newAPIClient(t, New(testConfig))
			conn, err := net.Dial("tcp", strings.TrimPrefix(c.srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			chunk := strings.Repeat("x", 4096)
			var b strings.Builder
			b.WriteString("POST " + route + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
			for range 20 { // 80 KiB: over the limit, well under net/http's 256 KiB drain
				fmt.Fprintf(&b, "%x\r\n%s\r\n", len(chunk), chunk)
			}
			if _, err := io.WriteString(conn, b.String()); err != nil {
				t.Fatal(err)
			}
			// No last chunk: the body stalls here.
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer while the body stalls: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
				t.Errorf("status %d, Connection close %v; want 413 and the connection closed", resp.StatusCode, resp.Close)
			}
		})
	}
}

// rawHalfClose writes raw, closes the write side of the connection and
// returns the parsed response.
func rawHalfClose(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestIsJSONMediaType(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                  true,
		"Application/JSON":                  true,
		"application/json; charset=utf-8":   true,
		"application/problem+json":          true,
		"application/vnd.api+json; v=1":     true,
		"text/json":                         false,
		"application/jsonx":                 false,
		"application/+json":                 false,
		"text/plain":                        false,
		"application/x-www-form-urlencoded": false,
		";":                                 false,
	} {
		if got := isJSONMediaType(ct); got != want {
			t.Errorf("isJSONMediaType(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestReadLimitedDeclaredLength: a body read under its declared length
// (one buffer of that size) is still read whole when it is longer than
// declared, and still refused past MaxBodyBytes, as a body of unknown
// length is.
func TestReadLimitedDeclaredLength(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		declared int64
		tooLarge bool
	}{
		{"as declared", 300, 300, false},
		{"empty", 0, 0, false},
		{"shorter than declared", 100, 300, false},
		{"longer than declared", 500, 300, false},
		{"at the limit", MaxBodyBytes, MaxBodyBytes, false},
		{"past the limit, declared small", MaxBodyBytes + 1, 10, true},
		{"past the limit, unknown", MaxBodyBytes + 1, -1, true},
		{"at the limit, unknown", MaxBodyBytes, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Repeat("a", tt.size)
			r := httptest.NewRequest(http.MethodPost, "/check-request", strings.NewReader(body))
			r.ContentLength = tt.declared
			rec := httptest.NewRecorder()
			data, perr := readLimited(rec, r)
			if tt.tooLarge {
				if perr == nil || perr.Code != ErrorPayloadTooLarge || rec.Header().Get("Connection") != "close" {
					t.Fatalf("got %v (Connection %q), want payload_too_large and Connection: close", perr, rec.Header().Get("Connection"))
				}
				return
			}
			if perr != nil {
				t.Fatalf("error %v", perr)
			}
			if string(data) != body {
				t.Errorf("read %d bytes, want the %d sent", len(data), len(body))
			}
		})
	}
}
