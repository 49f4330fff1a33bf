package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildServer compiles preflightd into dir and returns the binary's path.
func buildServer(ctx context.Context, dir string) (string, error) {
	return buildRootCommand(ctx, dir, "preflightd", "./server/cmd/preflightd")
}

// buildRootCommand compiles a command of the preflight module into
// dir/name. It builds inside that module (found through this module's
// replace directive), so the command's own dependencies resolve with the
// preflight module's go.sum, not with this one's.
func buildRootCommand(ctx context.Context, dir, name, pkg string) (string, error) {
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/agentpreflight/preflight").Output()
	if err != nil {
		return "", fmt.Errorf("locate the preflight module: %v", err)
	}
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = strings.TrimSpace(string(root))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// server is a running preflightd.
type server struct {
	cmd  *exec.Cmd
	addr string
	done chan error
	mu   sync.Mutex
	logs int // log lines seen
}

// startServer runs bin on a free loopback port (with args; none means
// preflightd's --addr 127.0.0.1:0) and waits (at most 30 s) for its
// "listening" line.
func startServer(ctx context.Context, bin string, args ...string) (*server, error) {
	if len(args) == 0 {
		args = []string{"--addr", "127.0.0.1:0"}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no PREFLIGHT_* settings from the environment
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.logs++
			s.mu.Unlock()
			var line struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
		io.Copy(io.Discard, stderr)
		s.done <- cmd.Wait()
	}()
	select {
	case s.addr = <-addr:
		if !strings.HasPrefix(s.addr, "127.0.0.1:") {
			s.kill()
			return nil, fmt.Errorf("the server listens on %s, not loopback", s.addr)
		}
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("preflightd exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		s.kill()
		return nil, errors.New("preflightd did not log \"listening\" within 30 s")
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM and waits for a clean exit (at most 40 s: the server
// drains for up to 30 s).
func (s *server) stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-s.done:
		if err != nil {
			return fmt.Errorf("preflightd exited with %v after SIGTERM", err)
		}
		return nil
	case <-time.After(40 * time.Second):
		s.kill()
		return errors.New("preflightd did not exit within 40 s of SIGTERM")
	}
}

// kill ends the process if it is still running.
func (s *server) kill() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Kill()
	}
}

// memSample is one reading of /proc/<pid>/status.
type memSample struct {
	at       time.Duration
	rss, hwm int64 // KiB
}

// memSampler reads the server's memory every 100 ms.
type memSampler struct {
	path   string
	warmup time.Duration
	start  time.Time
	quit   chan struct{}
	ended  chan struct{}

	mu      sync.Mutex
	samples []memSample
}

func newMemSampler(pid int, warmup time.Duration) *memSampler {
	return &memSampler{path: "/proc/" + strconv.Itoa(pid) + "/status", warmup: warmup, start: time.Now(),
		quit: make(chan struct{}), ended: make(chan struct{})}
}

func (m *memSampler) run() {
	defer close(m.ended)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		m.sample()
		select {
		case <-m.quit:
			m.sample()
			return
		case <-tick.C:
		}
	}
}

func (m *memSampler) stop() {
	close(m.quit)
	<-m.ended
}

func (m *memSampler) sample() {
	b, err := os.ReadFile(m.path)
	if err != nil {
		return
	}
	s := memSample{at: time.Since(m.start)}
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.rss = n
		case "VmHWM:":
			s.hwm = n
		}
	}
	m.mu.Lock()
	m.samples = append(m.samples, s)
	m.mu.Unlock()
}

// memResult summarizes the samples.
type memResult struct {
	ok                         bool
	samples                    int
	warmRSS, endRSS, peak      int64 // KiB
	minAfterWarm, maxAfterWarm int64
}

func (m *memSampler) result() memResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	var r memResult
	for _, s := range m.samples {
		if s.rss == 0 {
			continue
		}
		r.samples++
		r.peak = max(r.peak, s.hwm)
		if s.at >= m.warmup {
			if r.warmRSS == 0 {
				r.warmRSS = s.rss
				r.minAfterWarm = s.rss
			}
			r.minAfterWarm = min(r.minAfterWarm, s.rss)
			r.maxAfterWarm = max(r.maxAfterWarm, s.rss)
			r.endRSS = s.rss
		}
	}
	r.ok = r.warmRSS > 0
	return r
}
