package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkProxySessions measures the resident memory of a real
// `preflightd proxy` process (its own process: nothing else in its heap)
// in front of the test tools over Streamable HTTP, with 1,000 MCP sessions
// open. Each session is initialized and makes one guarded tools/call, so
// it holds a guard, a ledger entry and a saved result; no session keeps a
// standalone GET stream open. It reports the RSS before and after and the
// increase per session. Run with -benchtime 1x.
func BenchmarkProxySessions(b *testing.B) {
	const sessions = 1000
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go command to build the binaries")
	}
	dir := b.TempDir()
	for _, p := range []struct{ out, pkg string }{
		{"preflightd", "github.com/agentpreflight/preflight/server/cmd/preflightd"},
		{"toolserver", "github.com/agentpreflight/preflight/agent/mcpguard/mcptest/toolserver"},
	} {
		if out, err := exec.Command(goTool, "build", "-o", filepath.Join(dir, p.out), p.pkg).CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", p.pkg, err, out)
		}
	}
	upstream, _ := startLogged(b, filepath.Join(dir, "toolserver"), "-http", "127.0.0.1:0")
	proxyAddr, proxy := startLogged(b, filepath.Join(dir, "preflightd"), "proxy", "--listen", "127.0.0.1:0",
		"--upstream", "http://"+upstream+"/mcp", "--budget-usd", "5", "--max-calls", "100")
	url := "http://" + proxyAddr + "/mcp"
	client := &http.Client{Timeout: 30 * time.Second}

	for i := 0; i < b.N; i++ {
		openSession(b, client, url, 0) // warm up: code paths, pools
		time.Sleep(500 * time.Millisecond)
		before := rssKB(b, proxy.Process.Pid)
		for s := 1; s <= sessions; s++ {
			openSession(b, client, url, s)
		}
		time.Sleep(time.Second)
		after := rssKB(b, proxy.Process.Pid)
		b.ReportMetric(float64(before)/1024, "MB-rss-before")
		b.ReportMetric(float64(after)/1024, "MB-rss-1000-sessions")
		b.ReportMetric(float64(after-before)/sessions, "KB-per-session")
	}
}

// openSession initializes one session and makes one guarded call in it.
func openSession(b *testing.B, c *http.Client, url string, n int) {
	b.Helper()
	post := func(sid, body string) (string, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			b.Fatalf("%s: %d %s", body, resp.StatusCode, data)
		}
		return resp.Header.Get("Mcp-Session-Id"), string(data)
	}
	sid, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"load","version":"1"}}}`)
	if sid == "" {
		b.Fatal("no session id")
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, out := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"market_quote","arguments":{"symbol":"S`+strconv.Itoa(n%1000)+`"}}}`)
	if !strings.Contains(out, `"result"`) {
		b.Fatalf("tools/call: %s", out)
	}
}

var loggedAddr = regexp.MustCompile(`127\.0\.0\.1:[1-9][0-9]*`)

// startLogged starts bin and returns the first loopback address it prints.
func startLogged(b *testing.B, bin string, args ...string) (string, *exec.Cmd) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); pw.Close() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := loggedAddr.FindString(sc.Text()); m != "" {
				select {
				case found <- m:
				default:
				}
			}
		}
	}()
	select {
	case a := <-found:
		return a, cmd
	case <-time.After(60 * time.Second):
		b.Fatalf("%s printed no address", bin)
	}
	return "", nil
}

// rssKB reads the resident set size of pid from /proc.
func rssKB(b *testing.B, pid int) int {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if f := strings.Fields(string(line)); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
