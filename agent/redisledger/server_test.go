package redisledger

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests run against a real redis-server (Debian's redis-server
// package), started by each test on a free loopback port with a temporary
// directory. There is no mock.

var redisServerPath, redisCLIPath string

func TestMain(m *testing.M) {
	redisServerPath, _ = exec.LookPath("redis-server")
	redisCLIPath, _ = exec.LookPath("redis-cli")
	if redisServerPath == "" && os.Getenv(workerEnv) == "" {
		// Printed outside any test so that plain `go test` shows it.
		fmt.Fprintln(os.Stderr, "redisledger: redis-server is not installed (apt-get install redis-server): the Redis tests are skipped")
	}
	redis.SetLogger(quiet{}) // the fault tests make the pool log every failed dial
	os.Exit(m.Run())
}

// needRedis skips the test without redis-server, and fails it under
// CI=true, where .ci/run installs it.
func needRedis(t testing.TB) {
	t.Helper()
	if redisServerPath != "" && redisCLIPath != "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("redis-server or redis-cli is not installed; CI must install the Debian package redis-server")
	}
	t.Skip("redis-server is not installed (apt-get install redis-server)")
}

// redisProc is one redis-server the test started.
type redisProc struct {
	t    testing.TB
	port int
	dir  string
	args []string
	cmd  *exec.Cmd
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts a redis-server with extra config arguments
// ("--appendonly", "yes", ...) and stops it when the test ends. A port
// that another process took between freePort and the server's bind (a
// client's ephemeral port, another test's server) is given up for another
// one, at most 5 times.
func startRedis(t testing.TB, extra ...string) *redisProc {
	t.Helper()
	needRedis(t)
	p := &redisProc{t: t}
	t.Cleanup(p.kill)
	for try := 1; ; try++ {
		p.port, p.dir = freePort(t), t.TempDir()
		p.args = append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "yes", "--dir", p.dir, "--protected-mode", "no", "--logfile", filepath.Join(p.dir, "redis.log")}, extra...)
		if slices.Contains(extra, "--cluster-enabled") {
			// The bus port is chosen free too: by default it is the port
			// plus 10,000, which may be a client's ephemeral port.
			p.args = append(p.args, "--cluster-port", strconv.Itoa(freePort(t)))
		}
		err := p.tryStart()
		if err == nil {
			return p
		}
		if try == 5 {
			t.Fatal(err)
		}
		t.Logf("redis-server not started (%v); on another port", err)
	}
}

func (p *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// start starts the server again, on its port, with its data.
func (p *redisProc) start() {
	p.t.Helper()
	if err := p.tryStart(); err != nil {
		p.t.Fatal(err)
	}
}

// tryStart starts the server and waits until it answers. An answer from
// another process on the port (INFO's process_id tells) is an error, and
// so is a bind that failed: the server is then stopped.
func (p *redisProc) tryStart() error {
	args := append([]string{"--port", strconv.Itoa(p.port)}, p.args...)
	p.cmd = exec.Command(redisServerPath, args...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	pid := "process_id:" + strconv.Itoa(p.cmd.Process.Pid)
	logPath := filepath.Join(p.dir, "redis.log")
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(redisCLIPath, "-p", strconv.Itoa(p.port), "info", "server").CombinedOutput()
		if err == nil && strings.Contains(string(out), "process_id:") {
			if !slices.Contains(strings.Split(string(out), "\r\n"), pid) {
				p.kill()
				return fmt.Errorf("port %d is another redis-server's", p.port)
			}
			// INFO answers while the data loads; PING waits for it.
			out, err = exec.Command(redisCLIPath, "-p", strconv.Itoa(p.port), "ping").CombinedOutput()
			if err == nil && strings.TrimSpace(string(out)) == "PONG" {
				return nil
			}
		}
		log, _ := os.ReadFile(logPath)
		if strings.Contains(string(log), "Address already in use") {
			p.kill()
			return fmt.Errorf("port %d or its cluster bus port is taken: %s", p.port, log)
		}
		if time.Now().After(deadline) {
			p.kill()
			return fmt.Errorf("redis-server on port %d did not answer: %s %v\n%s", p.port, out, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops the server with SIGKILL: no shutdown save, as in a crash.
func (p *redisProc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// client returns a client as the README recommends: ContextTimeoutEnabled,
// so that a call's deadline also bounds its wait on Redis.
func (p *redisProc) client(t testing.TB) redis.UniversalClient {
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{p.addr()}, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// TestStartRedisOnATakenPort: the test servers' start tells a port that
// another redis-server answers on from its own, so that no test runs
// against another's server.
func TestStartRedisOnATakenPort(t *testing.T) {
	first := startRedis(t)
	second := &redisProc{t: t, port: first.port, dir: t.TempDir()}
	second.args = []string{"--bind", "127.0.0.1", "--save", "", "--dir", second.dir, "--logfile", filepath.Join(second.dir, "redis.log")}
	t.Cleanup(second.kill)
	if err := second.tryStart(); err == nil {
		t.Fatalf("a second redis-server on port %d started", first.port)
	} else {
		t.Log(err)
	}
	if second.cmd != nil {
		t.Error("the server that could not bind was left running")
	}
}
