package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a new pseudo-terminal pair through /dev/ptmx (Linux), with
// nothing beyond package syscall.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pty number: %v", e)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestTerminalWelcome starts preflightd (this test binary, through
// clitest's hook) with its standard error on a real pseudo-terminal and
// requires the lines for a person before the JSON "listening" line; with a
// pipe (TestBinaryEndToEnd) the first line is JSON.
func TestTerminalWelcome(t *testing.T) {
	master, slave := openPTY(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "--addr", "127.0.0.1:0")
	cmd.Env = []string{"PREFLIGHT_CLITEST_MAIN=1", "PATH=" + os.Getenv("PATH")}
	cmd.Stderr = slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	slave.Close() // the child holds its own copy

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(master)
		for sc.Scan() {
			lines <- strings.TrimRight(sc.Text(), "\r")
		}
	}()
	var got []string
	timeout := time.After(time.Minute) // a guard against a hang, not a timing assertion
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the terminal closed before the listening line; got %q", got)
			}
			got = append(got, line)
			var log struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &log) != nil || log.Msg != "listening" {
				continue
			}
			base := "http://" + log.Addr
			want := []string{
				"preflightd is listening on " + base + "; the tool-call route is free (no --pay-to).",
				"  docs    " + base + "/docs",
				"  health  " + base + "/health",
				"  MCP     " + base + "/mcp",
				"Press Ctrl-C to stop. One JSON log line per request follows.",
			}
			if len(got) != len(want)+1 || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
				t.Errorf("terminal output before the JSON line:\n%s\nwant:\n%s", strings.Join(got[:len(got)-1], "\n"), strings.Join(want, "\n"))
			}
			return
		case <-timeout:
			t.Fatalf("no listening line within a minute; got %q", got)
		}
	}
}
