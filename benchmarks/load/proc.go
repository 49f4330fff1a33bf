package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// ProcConfig starts a server in a process of its own.
type ProcConfig struct {
	// Bin is the server binary. It must take --addr (or -addr) and log a
	// JSON line with "msg":"listening" and the "addr" it listens on to
	// standard error, as preflightd and floorserver do.
	Bin string
	// Args follow the binary's name; "-addr 127.0.0.1:0" is added.
	Args []string
	// GOMAXPROCS is set in the server's environment; zero leaves it unset.
	GOMAXPROCS int
	// Env holds further NAME=value settings of the server's environment,
	// which otherwise holds only PATH (and GOMAXPROCS).
	Env []string
	// CPU pins the server to this CPU with taskset; -1 leaves it unpinned.
	CPU int
	// LogDir receives the server's standard error (its access log
	// included) as a file, written as an operator's log file would be.
	LogDir string
}

// Proc is a running server process.
type Proc struct {
	// Addr is the "127.0.0.1:port" the server listens on.
	Addr string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// StartProc starts the server of cfg and waits, at most 30 s, for its
// listening line.
func StartProc(ctx context.Context, cfg ProcConfig) (*Proc, error) {
	logf, err := os.CreateTemp(cfg.LogDir, filepath.Base(cfg.Bin)+"-*.log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"-addr", "127.0.0.1:0"}, cfg.Args...)
	name := cfg.Bin
	if cfg.CPU >= 0 {
		args = append([]string{"-c", strconv.Itoa(cfg.CPU), cfg.Bin}, args...)
		name = "taskset"
	}
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no PREFLIGHT_* settings from the environment
	if cfg.GOMAXPROCS > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(cfg.GOMAXPROCS))
	}
	cmd.Env = append(cmd.Env, cfg.Env...)
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		os.Remove(logf.Name())
		return nil, err
	}
	p := &Proc{cmd: cmd, log: logf.Name(), done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if addr := listeningAddr(p.log); addr != "" {
			if err := checkLoopback(addr); err != nil {
				p.Close()
				return nil, err
			}
			p.Addr = addr
			return p, nil
		}
		select {
		case err := <-p.done:
			b, _ := os.ReadFile(p.log)
			os.Remove(p.log)
			return nil, fmt.Errorf("%s exited before listening (%v): %.500s", cfg.Bin, err, b)
		case <-ctx.Done():
			p.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Close()
			return nil, fmt.Errorf("%s did not log a listening line within 30 s", cfg.Bin)
		}
	}
}

// listeningAddr returns the addr of the first "listening" line of the log
// file, or "".
func listeningAddr(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" && line.Addr != "" {
			return line.Addr
		}
	}
	return ""
}

// CPUTime is the user plus system CPU time the process has used so far
// (from /proc), or zero when it cannot be read.
func (p *Proc) CPUTime() time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at ") ".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

// Close stops the server (SIGTERM, then SIGKILL after 10 s) and removes
// its log file.
func (p *Proc) Close() error {
	defer os.Remove(p.log)
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// PinSelf pins every thread of this process (and so every thread it
// starts later) to cpu, or to every CPU when cpu is -1, and sets
// GOMAXPROCS to 1 when pinned (the runtime default otherwise). The load
// generator pins itself to the CPU the server does not use.
func PinSelf(cpu int) error {
	if runtime.GOOS != "linux" {
		return errors.New("load: pinning needs Linux")
	}
	var mask [16]uint64
	if cpu < 0 {
		for i := range runtime.NumCPU() {
			mask[i/64] |= 1 << (i % 64)
		}
		runtime.GOMAXPROCS(runtime.NumCPU())
	} else {
		mask[cpu/64] |= 1 << (cpu % 64)
		runtime.GOMAXPROCS(1)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
		if e != 0 && e != syscall.ESRCH {
			return fmt.Errorf("load: sched_setaffinity: %w", e)
		}
	}
	return nil
}

// Pid is the server's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }
