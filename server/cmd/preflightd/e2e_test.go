package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentpreflight/preflight/server/internal/golden"
	"github.com/agentpreflight/preflight/server/internal/testpart"
)

// daemon is a running preflightd process and its log lines.
type daemon struct {
	cmd       *exec.Cmd
	addr      string
	listening map[string]any      // the "listening" log line
	logs      chan map[string]any // every JSON log line, in order
	all       *bytes.Buffer       // raw log output, read after exit
	done      chan error
}

// buildBinary compiles preflightd into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		testpart.Missing(t, "the go command is not on PATH; it builds preflightd")
	}
	bin := filepath.Join(t.TempDir(), "preflightd")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startDaemon runs bin on a free loopback port and waits for its
// "listening" log line.
func startDaemon(t *testing.T, bin string, args ...string) *daemon {
	t.Helper()
	return startDaemonEnv(t, bin, nil, args...)
}

// startDaemonEnv is startDaemon with env ("NAME=value") added to a clean
// environment.
func startDaemonEnv(t *testing.T, bin string, env []string, args ...string) *daemon {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...) // no PREFLIGHT_* or OTEL_* from the test's environment
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, logs: make(chan map[string]any, 1000), all: &bytes.Buffer{}, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			d.all.Write(sc.Bytes())
			d.all.WriteByte('\n')
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil {
				d.logs <- line
			}
		}
		close(d.logs)
		d.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	line := d.waitLog(t, "listening")
	d.listening = line
	d.addr, _ = line["addr"].(string)
	if d.addr == "" {
		t.Fatalf("listening line without addr: %v", line)
	}
	return d
}

// waitLog returns the next log line whose msg is msg.
func (d *daemon) waitLog(t *testing.T, msg string) map[string]any {
	t.Helper()
	for line := range d.logs {
		if line["msg"] == msg {
			return line
		}
	}
	t.Fatalf("the process ended before logging %q", msg)
	return nil
}

// sigtermMidBody sends head, which must ask for "100 Continue", and the
// first 20 bytes of body on conn, then sends SIGTERM to d and waits for its
// "shutting down" line; the caller sends the rest. The server sends 100
// Continue only once the handler reads the body: receiving it proves the
// request is in flight before the signal.
func (d *daemon) sigtermMidBody(t *testing.T, conn net.Conn, br *bufio.Reader, head, body string) {
	t.Helper()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("want 100 Continue, got %q, %v", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil { // the blank line ending the 100
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, body[:20]); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.waitLog(t, "shutting down")
}

// TestBinaryEndToEnd builds the real binary, starts it, waits for /health,
// exercises every route, runs the curl examples of
// server/testdata/curl-examples.sh, then sends SIGTERM while a request is
// in flight (its body only half sent) and checks that the request
// completes and the process exits 0.
func TestBinaryEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	d := startDaemon(t, buildBinary(t))
	base := "http://" + d.addr

	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health %d", resp.StatusCode)
	}

	const secretBody, secretHeader = "body-marker-7f3a", "header-marker-91c2"
	routes := []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/check-request", `{"request":{"method":"POST","url":"https://a.example/","body":"` + secretBody + `"},"schema":{"type":"string"}}`, 200},
		{"POST", "/v0.2/preflight/tool-call", `{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`, 200},
		{"POST", "/v0.2/usage/dump", `{}`, 503},
		{"GET", "/health", "", 200},
		{"GET", "/openapi.json", "", 200},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`, 200},
		{"GET", "/docs", "", 200},
		{"GET", "/docs/index.md", "", 200},
		{"GET", "/index.md", "", 200},
		{"GET", "/llms.txt", "", 200},
		{"GET", "/llms-full.txt", "", 200},
		{"GET", "/.well-known/api-catalog", "", 200},
		{"GET", "/.well-known/agent-skills/index.json", "", 200},
		{"GET", "/.well-known/agent-skills/preflight/SKILL.md", "", 200},
		{"GET", "/nope", "", 404},
		{"DELETE", "/check-request", "", 405},
	}
	for _, r := range routes {
		req, _ := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Marker", secretHeader)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != r.status {
			t.Errorf("%s %s: %d, want %d", r.method, r.path, resp.StatusCode, r.status)
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s: no X-Request-Id", r.method, r.path)
		}
	}

	t.Run("curl examples", func(t *testing.T) { runCurlExamples(t, base) })

	// A request whose body is half sent when SIGTERM arrives. It asks for
	// "100 Continue", which the server sends only once the handler reads the
	// body: receiving it proves the request is in flight before the signal.
	body := `{"runId":"r","stepId":"slow","tool":{"provider":"browse","operation":"fetch","request":{"url":"https://example.com/"},"estimatedExternalCostUsd":0.001},"budget":{"remainingUsd":1}}`
	conn, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	head := "POST /v0.2/preflight/tool-call HTTP/1.1\r\nHost: " + d.addr + "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n"
	d.sigtermMidBody(t, conn, br, head, body)
	for i := 20; i < len(body); i += 20 { // dribble the rest
		if _, err := io.WriteString(conn, body[i:min(i+20, len(body))]); err != nil {
			t.Fatalf("finishing the in-flight body: %v", err)
		}
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("in-flight request after SIGTERM: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(got, []byte(`"decision":"allow"`)) {
		t.Errorf("in-flight request: %d %s", resp.StatusCode, got)
	}
	d.waitLog(t, "stopped")
	for range d.logs {
	}
	if err := <-d.done; err != nil {
		t.Errorf("process exit: %v, want exit status 0", err)
	}

	logs := d.all.String()
	if strings.Contains(logs, secretBody) || strings.Contains(logs, secretHeader) {
		t.Errorf("the access log contains a request body or header value:\n%s", logs)
	}
	if n := strings.Count(logs, `"msg":"request"`); n < len(routes) {
		t.Errorf("%d access log lines, want at least %d", n, len(routes))
	}
	for _, field := range []string{`"method":`, `"path":`, `"status":`, `"duration_ms":`, `"request_id":`} {
		if !strings.Contains(logs, field) {
			t.Errorf("access log lacks %s", field)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// runCurlExamples runs every example of server/testdata/curl-examples.sh
// exactly as written, each in its own shell after the file's preamble (with
// BASE pointing at the test server), and compares their outputs, each under
// its title comment, with curl-examples.golden.
func runCurlExamples(t *testing.T, base string) {
	if _, err := exec.LookPath("curl"); err != nil {
		testpart.Missing(t, "curl is not installed; apt-get install curl")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		testpart.Missing(t, "bash is not installed; apt-get install bash")
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "curl-examples.sh"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(strings.TrimSpace(string(src)), "\n\n")
	preamble := blocks[0] // the header comment and BASE=...
	var out strings.Builder
	for _, ex := range blocks[1:] {
		title, _, _ := strings.Cut(ex, "\n")
		cmd := exec.Command(bash, "-e", "-c", preamble+"\n"+ex)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "BASE=" + base}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", title, err, stderr.String())
		}
		out.WriteString(title + "\n" + strings.TrimRight(stdout.String(), "\n") + "\n\n")
	}
	got := out.String()
	golden.Check(t, filepath.Join("..", "..", "testdata", "curl-examples.golden"), []byte(got))
}

// TestBinaryPaymentConfig: a bad payment configuration stops the binary at
// start with exit status 1 and a message naming the problem; a good one
// serves the tool-call route behind a 402 challenge.
func TestBinaryPaymentConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)

	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--pay-to", "0x123", "--facilitator-url", "https://facilitator.example")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "invalid payment configuration") {
		t.Errorf("bad pay-to: %v, output %q; want exit status 1 naming the payment configuration", err, out)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0") // a facilitator address; the challenge needs no call to it
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := startDaemon(t, bin, "--pay-to", "0x1111111111111111111111111111111111111111", "--facilitator-url", "http://"+ln.Addr().String())
	resp, err := http.Post("http://"+d.addr+"/v0.2/preflight/tool-call", "application/json",
		strings.NewReader(`{"runId":"r","stepId":"s","tool":{"provider":"search","operation":"web_search","request":{"query":"q"},"estimatedExternalCostUsd":0},"budget":{"remainingUsd":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 402 || resp.Header.Get("PAYMENT-REQUIRED") == "" {
		t.Errorf("paid route without payment: %d, PAYMENT-REQUIRED %q", resp.StatusCode, resp.Header.Get("PAYMENT-REQUIRED"))
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range d.logs {
	}
	if err := <-d.done; err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}
