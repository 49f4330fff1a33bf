//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVerifyRefusesFIFO: a named pipe given as a file is refused at once,
// as the usage promises of what is not a regular file, rather than
// waiting for ever for a writer (opening a FIFO to read blocks until one
// comes).
func TestVerifyRefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here: ", err)
	}
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() {
		done <- run([]string{"verify", "--request", fifo, "--response", fifo, "--receipt", fifo, "--keys", fifo}, strings.NewReader(""), io.Discard, &errOut)
	}()
	select {
	case got := <-done:
		if got != exitError || !strings.Contains(errOut.String(), "not a regular file") {
			t.Errorf("exit %d, stderr %q; want %d and a refusal of the pipe", got, errOut.String(), exitError)
		}
	case <-time.After(10 * time.Second):
		// Unblock the command's open so that the test ends.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("preflight verify still waits on a named pipe after 10 s")
	}
}
