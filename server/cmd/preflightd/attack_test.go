package main

import (
	"fmt"
	"io"
	"net/http"
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
