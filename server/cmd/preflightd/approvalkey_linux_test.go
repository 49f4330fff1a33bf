package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProxyApprovalKeyNotRegular: --approval-key naming a FIFO or a
// device is refused at start, as --signing-key and --operations refuse
// them, instead of waiting for ever for a FIFO's writer or reading a
// device that never ends.
func TestProxyApprovalKeyNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{fifo, "/dev/zero"} {
		o, err := parseProxyFlags([]string{"--upstream", "http://127.0.0.1:9/mcp", "--approval-key", file}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := o.guardOptions()
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "--approval-key") || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("--approval-key %s: error %v, want a refusal naming the flag", file, err)
			}
		case <-time.After(10 * time.Second):
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close() // unblock the read so that the test ends
			}
			t.Fatalf("--approval-key %s: still waiting after 10 s", file)
		}
	}
}
