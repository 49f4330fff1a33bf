package redisledger

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
// ("--appendonly", "yes", ...) and stops it when the test ends.
func startRedis(t testing.TB, extra ...string) *redisProc {
	t.Helper()
	needRedis(t)
	p := &redisProc{t: t, port: freePort(t), dir: t.TempDir()}
	p.args = append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "yes", "--dir", p.dir, "--protected-mode", "no", "--logfile", filepath.Join(p.dir, "redis.log")}, extra...)
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *redisProc) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

func (p *redisProc) start() {
	p.t.Helper()
	args := append([]string{"--port", strconv.Itoa(p.port)}, p.args...)
	p.cmd = exec.Command(redisServerPath, args...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(redisCLIPath, "-p", strconv.Itoa(p.port), "ping").CombinedOutput()
		if err == nil && strings.TrimSpace(string(out)) == "PONG" {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(p.dir, "redis.log"))
			p.t.Fatalf("redis-server on port %d did not answer: %s %v\n%s", p.port, out, err, log)
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
