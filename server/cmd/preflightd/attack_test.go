package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBinaryUnderAttack runs the attacks of issue 21 against the built
// binary and measures what they cost it.
func TestBinaryUnderAttack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)

	t.Run("MCP batches keep memory flat", func(t *testing.T) {
		d := startDaemon(t, bin)
		base := "http://" + d.addr
		// Warm up: the same routes once, so that the baseline includes the
		// server's ordinary working set.
		for range 3 {
			mcpPostRaw(t, base, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		}
		before := vmHWM(t, d.cmd.Process.Pid)
		batch := toolsListBatch(1300)
		var wg sync.WaitGroup
		statuses := make(chan int, 64)
		for range 16 {
			wg.Go(func() {
				for range 4 {
					status, n := mcpPostRaw(t, base, batch)
					if n > 4096 {
						t.Errorf("a batch got a %d-byte answer", n)
					}
					statuses <- status
				}
			})
		}
		wg.Wait()
		close(statuses)
		for s := range statuses {
			if s != http.StatusBadRequest {
				t.Errorf("batch answered %d, want 400", s)
			}
		}
		after := vmHWM(t, d.cmd.Process.Pid)
		t.Logf("VmHWM %d kB before, %d kB after 64 batches (16 concurrent)", before, after)
		if after-before > 32<<10 {
			t.Errorf("peak RSS grew by %d kB under 16 concurrent batches; want under 32 MB", after-before)
		}
	})

	t.Run("64 concurrent worst-case patterns all get a status", func(t *testing.T) {
		d := startDaemon(t, bin)
		base := "http://" + d.addr
		pat, _ := json.Marshal(`[ab]*a[ab]{1000}[ab]{1000}[ab]{990}c`)
		body := `{"request":{"method":"POST","url":"https://api.example.com/x","headers":{},"body":"` +
			strings.Repeat("ab", 30000) + `"},"schema":{"type":"string","pattern":` + string(pat) + `}}`
		writeTimeout := defaultOps().writeTimeout // startDaemon sets no timeout flag
		pid := d.cmd.Process.Pid
		cpuBefore := processCPU(t, pid)
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		counts := map[int]int{}
		var slowest time.Duration
		for range 64 {
			wg.Go(func() {
				t0 := time.Now()
				// The client waits past the server's write timeout, so a
				// connection closed without a status shows as an error.
				c := &http.Client{Timeout: writeTimeout + 10*time.Second}
				resp, err := c.Post(base+"/check-request", "application/json", strings.NewReader(body))
				status := 0
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
					if status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
						t.Errorf("503 without Retry-After")
					}
				}
				mu.Lock()
				counts[status]++
				slowest = max(slowest, time.Since(t0))
				mu.Unlock()
			})
		}
		wg.Wait()
		wall := time.Since(start)
		cpu := processCPU(t, pid) - cpuBefore
		t.Logf("64 requests: statuses %v, slowest %v, wall %v, server CPU %v (%.1f ms per request), VmHWM %d kB",
			counts, slowest.Round(time.Millisecond), wall.Round(time.Millisecond), cpu, float64(cpu.Microseconds())/64000, vmHWM(t, pid))
		for status, n := range counts {
			if status != 200 && status != 400 && status != 503 {
				t.Errorf("%d requests got status %d (0: no status at all); want 200, 400 or 503", n, status)
			}
		}
		if slowest > writeTimeout {
			t.Errorf("the slowest answer took %v, past the %v write timeout", slowest, writeTimeout)
		}
	})
}

// processCPU reads the user+system CPU time of process pid from /proc.
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("cannot read CPU time from /proc: %v", err)
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields, in clock ticks (100 per second on Linux).
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// toolsListBatch is a JSON-RPC batch of n tools/list calls.
func toolsListBatch(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i)
	}
	b.WriteByte(']')
	return b.String()
}

// mcpPostRaw posts body to /mcp as a client without MCP-Protocol-Version
// and returns the status and the size of the answer.
func mcpPostRaw(t *testing.T, base, body string) (int, int64) {
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Error(err)
		return 0, 0
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n
}

// vmHWM reads the peak resident set size of process pid, in kB, from
// /proc (Linux only; elsewhere the test skips).
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("cannot read peak RSS from /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err == nil {
				return n
			}
		}
	}
	t.Skip("no VmHWM line in /proc status")
	return 0
}

// TestAccessLogUndeliveredResponse: a response finished after the write
// timeout never reaches the client; the access log must say so instead of
// recording the status the handler chose.
func TestAccessLogUndeliveredResponse(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("{}"))
	})
	ts := httptest.NewUnstartedServer(accessLog(newLogSink(io.Discard), logger, slow))
	ts.Config.WriteTimeout = 100 * time.Millisecond
	ts.Start()
	defer ts.Close()
	if resp, err := http.Get(ts.URL); err == nil {
		resp.Body.Close()
		t.Fatalf("the client got status %d past the write timeout", resp.StatusCode)
	}
	var line map[string]any
	for range 50 {
		mu.Lock()
		json.Unmarshal(bytes.TrimSpace(logs.Bytes()), &line)
		mu.Unlock()
		if line != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if line["status"] != float64(0) || line["delivered"] != false || line["intended_status"] != float64(200) {
		t.Errorf("access log line %v; want status 0, delivered false, intended_status 200", line)
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestBinaryUnparseableHTTP sends requests that net/http refuses before
// any handler runs, and one it parses but the binary refuses on the
// connection: each gets exactly the answer the site guide documents, and
// then the connection is closed; the server goes on answering new ones.
func TestBinaryUnparseableHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	d := startDaemon(t, buildBinary(t))
	const plain = "text/plain; charset=utf-8"
	for _, tc := range []struct {
		name, request string
		status        string // resp.Status, net/http's own text
		contentType   string
		body          string // the whole body for plain text; a part of a JSON one
	}{
		{"header section over the limit", "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", 40<<10) + "\r\n\r\n",
			"431 Request Header Fields Too Large", plain, "431 Request Header Fields Too Large"},
		{"malformed request line", "GARBAGE\r\n\r\n",
			"400 Bad Request", plain, "400 Bad Request"},
		{"malformed header line", "GET /health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
			"400 Bad Request", plain, "400 Bad Request"},
		{"missing Host", "GET /health HTTP/1.1\r\n\r\n",
			"400 Bad Request: missing required Host header", plain, "400 Bad Request: missing required Host header"},
		{"unsupported HTTP version", "GET /health HTTP/2.0\r\nHost: x\r\n\r\n",
			"505 HTTP Version Not Supported: unsupported protocol version", plain, "505 HTTP Version Not Supported: unsupported protocol version"},
		{"unknown Transfer-Encoding", "POST /check-request HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
			"501 Not Implemented", plain, "Unsupported transfer encoding"},
		// Parsed by net/http, refused by the binary (framing.go).
		{"Content-Length with Transfer-Encoding", "POST /check-request HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			"400 Bad Request", "application/json", `{"error":{"code":"invalid_request","message":"the request has both Content-Length and Transfer-Encoding`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", d.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(conn, tc.request)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no readable answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_, next := br.ReadByte()
			if resp.Status != tc.status || resp.Header.Get("Content-Type") != tc.contentType || !resp.Close {
				t.Errorf("status %q, Content-Type %q, Connection: close %t; want %q, %q, true", resp.Status, resp.Header.Get("Content-Type"), resp.Close, tc.status, tc.contentType)
			}
			if whole := tc.contentType == plain; (whole && string(body) != tc.body) || !strings.Contains(string(body), tc.body) {
				t.Errorf("body %q, want %q", body, tc.body)
			}
			if next != io.EOF {
				t.Errorf("after the answer the connection gave %v, want EOF (closed)", next)
			}
		})
	}
	resp, err := http.Get("http://" + d.addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /health after the refusals: %d, want 200", resp.StatusCode)
	}
}
