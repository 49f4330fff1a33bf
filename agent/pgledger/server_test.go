package pgledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The tests run against a real PostgreSQL (Debian's postgresql package),
// which each test initialises (initdb) in a temporary directory and starts
// on a free loopback port. There is no mock.

var pgBin string // the directory of initdb and postgres

func TestMain(m *testing.M) {
	if p, err := exec.LookPath("initdb"); err == nil {
		pgBin = filepath.Dir(p)
	} else if found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(found) > 0 {
		sort.Strings(found)
		pgBin = filepath.Dir(found[len(found)-1])
	}
	if pgBin == "" && os.Getenv(workerEnv) == "" {
		fmt.Fprintln(os.Stderr, "pgledger: PostgreSQL is not installed (apt-get install postgresql): the tests are skipped")
	}
	os.Exit(m.Run())
}

// needPostgres skips the test without PostgreSQL, and fails it under
// CI=true, where .ci/run installs it.
func needPostgres(t testing.TB) {
	t.Helper()
	if pgBin != "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("PostgreSQL is not installed; CI must install the Debian package postgresql")
	}
	t.Skip("PostgreSQL is not installed (apt-get install postgresql)")
}

// pgProc is one PostgreSQL server the test started.
type pgProc struct {
	t    testing.TB
	port int
	dir  string
	cred *syscall.Credential // the postgres user's, when the tests run as root
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

// startPostgres initialises a cluster in a temporary directory and starts
// it; it is killed when the test ends.
func startPostgres(t testing.TB, extra ...string) *pgProc {
	t.Helper()
	needPostgres(t)
	p := &pgProc{t: t, port: freePort(t)}
	dir, err := os.MkdirTemp("", "pgledger-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p.dir = dir
	if os.Geteuid() == 0 { // initdb and postgres refuse to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root and there is no postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	initdb := exec.Command(filepath.Join(pgBin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "preflight", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.args = extra
	t.Cleanup(p.kill)
	// A port another process took before the server bound it (a client's
	// ephemeral port, another test's server) is given up for another.
	for try := 1; ; try++ {
		err := p.tryStart()
		if err == nil {
			return p
		}
		if try == 5 {
			t.Fatal(err)
		}
		t.Logf("postgres not started (%v); on another port", err)
		p.port = freePort(t)
	}
}

// start starts the server again, on its port, with its data.
func (p *pgProc) start() {
	p.t.Helper()
	if err := p.tryStart(); err != nil {
		p.t.Fatal(err)
	}
}

// tryStart starts the server and waits until it answers. An answer from
// another server on the port (its data_directory tells) is an error, and
// so is a bind that failed: the server is then stopped.
func (p *pgProc) tryStart() error {
	args := append([]string{"-D", filepath.Join(p.dir, "data"), "-p", strconv.Itoa(p.port), "-k", p.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "shared_buffers=16MB"}, p.args...)
	p.cmd = exec.Command(filepath.Join(pgBin, "postgres"), args...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: p.cred}
	log, err := os.OpenFile(filepath.Join(p.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		p.t.Fatal(err)
	}
	defer log.Close()
	// The log is appended to: only what this start writes counts.
	logged, _ := log.Seek(0, io.SeekEnd)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	data := filepath.Join(p.dir, "data")
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.addr(), time.Second)
		if err == nil {
			c.Close()
			var dir string
			dir, err = dataDirectory(p.dsn())
			if err == nil {
				if dir != data {
					p.kill()
					return fmt.Errorf("port %d is another server's (data directory %s)", p.port, dir)
				}
				return nil
			}
		}
		b, _ := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
		b = b[min(logged, int64(len(b))):]
		if bytes.Contains(b, []byte("could not create any TCP/IP sockets")) {
			p.kill()
			return fmt.Errorf("port %d is taken: %s", p.port, b)
		}
		if time.Now().After(deadline) {
			p.kill()
			return fmt.Errorf("postgres on port %d did not answer: %v\n%s", p.port, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dataDirectory is the data directory of the server at dsn.
func dataDirectory(dsn string) (string, error) {
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	var dir string
	err = pool.QueryRow(context.Background(), "SHOW data_directory").Scan(&dir)
	return dir, err
}

func (p *pgProc) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

func (p *pgProc) dsn() string {
	return fmt.Sprintf("postgres://preflight@%s/postgres?sslmode=disable&connect_timeout=2", p.addr())
}

// kill stops the server with SIGKILL, as in a crash: the postmaster and
// its backends (one process group) all die at once.
func (p *pgProc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.cmd = nil
	// The backends die a moment after the postmaster; one still attached to
	// the shared memory makes the next start refuse the data directory
	// ("pre-existing shared memory block is still in use", seen under
	// load). Wait, up to 10 s, until no process of the group is left.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			break
		}
	}
	// The shared memory and the lock file of a killed postmaster are left;
	// the next start removes the stale lock itself.
}

// pool returns a pool on the server, closed when the test ends.
func (p *pgProc) pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), p.dsn())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newStore opens scope on p, closed when the test ends.
func newStore(t testing.TB, p *pgProc, scope string, opts *Options) *Store {
	t.Helper()
	s, err := New(context.Background(), p.pool(t), scope, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStartPostgresOnATakenPort: the test servers' start tells a port
// that another PostgreSQL answers on from its own, so that no test runs
// against another's server.
func TestStartPostgresOnATakenPort(t *testing.T) {
	first, second := startPostgres(t), startPostgres(t)
	second.kill()
	second.port = first.port
	if err := second.tryStart(); err == nil {
		t.Fatalf("a second postgres on port %d started", first.port)
	} else {
		t.Log(err)
	}
	if second.cmd != nil {
		t.Error("the server that could not bind was left running")
	}
}
