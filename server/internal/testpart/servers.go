package testpart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// freePort returns a loopback port nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartRedis starts a redis-server (Debian's redis-server package) on a
// free loopback port with a temporary directory, no snapshots and the
// config arguments extra ("--appendonly", "yes", ...; "--requirepass"
// for a password), stops it when the test ends, and returns its address.
// A port another process took before the server bound it is given up
// for another, at most 5 times. Without redis-server it calls Missing.
func StartRedis(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, "redis-server is not installed (apt-get install redis-server)")
	}
	for try := 1; ; try++ {
		addr, err := startRedis(t, bin, extra)
		if err == nil {
			return addr
		}
		if try == 5 {
			t.Fatal(err)
		}
		t.Logf("redis-server not started (%v); on another port", err)
		if i := slices.Index(extra, "--cluster-port"); i >= 0 && i+1 < len(extra) {
			extra = slices.Clone(extra)
			extra[i+1] = strconv.Itoa(freePort(t))
		}
	}
}

// startRedis is one try of StartRedis: the server answers, and it is the
// one started here (INFO's process_id), not another on the same port.
func startRedis(t testing.TB, bin string, extra []string) (string, error) {
	port, dir := freePort(t), t.TempDir()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir,
		"--protected-mode", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	addr := "127.0.0.1:" + strconv.Itoa(port)
	opts := &redis.Options{Addr: addr}
	if i := slices.Index(extra, "--requirepass"); i >= 0 && i+1 < len(extra) {
		opts.Password = extra[i+1]
	}
	c := redis.NewClient(opts)
	defer c.Close()
	pid := "process_id:" + strconv.Itoa(cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := c.Info(context.Background(), "server").Result()
		if err == nil {
			if !slices.Contains(strings.Split(info, "\r\n"), pid) {
				stop()
				return "", fmt.Errorf("port %d is another redis-server's", port)
			}
			t.Cleanup(stop)
			return addr, nil
		}
		if !isDial(err) {
			stop()
			return "", fmt.Errorf("redis-server on port %d: %v", port, err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		if bytes.Contains(b, []byte("Address already in use")) {
			stop()
			return "", fmt.Errorf("port %d or its cluster bus port is taken: %s", port, b)
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("redis-server did not answer within 10 s:\n%s", b)
		}
	}
}

func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// StartPostgres initialises a PostgreSQL cluster (Debian's postgresql
// package, or initdb on PATH) in a temporary directory, starts it on a
// free loopback port (as the postgres user when the test runs as root,
// which PostgreSQL refuses), stops it when the test ends, and returns its
// postgres:// URL (user preflight, trust authentication, database
// postgres). Without PostgreSQL it calls Missing.
func StartPostgres(t testing.TB) string {
	t.Helper()
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		if len(found) == 0 {
			Missing(t, "PostgreSQL is not installed (apt-get install postgresql)")
		}
		sort.Strings(found)
		initdb = found[len(found)-1]
	}
	dir, err := os.MkdirTemp("", "preflight-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root and there is no postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "preflight", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// A port another process took before the server bound it (a client's
	// ephemeral port, another test's server) is given up for another.
	for try := 1; ; try++ {
		port := freePort(t)
		pg := exec.Command(filepath.Join(filepath.Dir(initdb), "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "shared_buffers=16MB")
		pg.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
		if err := pg.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { pg.Wait(); close(exited) }()
		stop := func() { syscall.Kill(-pg.Process.Pid, syscall.SIGKILL); <-exited }
		url := fmt.Sprintf("postgres://preflight@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", port)
		err := awaitPostgres(url, data, exited)
		if err == nil {
			t.Cleanup(stop)
			return url
		}
		stop()
		if try == 5 {
			t.Fatal(err)
		}
		t.Logf("postgres not started (%v); on another port", err)
	}
}

// awaitPostgres waits until the server started with data answers at url.
// An answer from another server on the port (its data_directory tells)
// is an error, and so is the server's exit (its bind failed).
func awaitPostgres(url, data string, exited <-chan struct{}) error {
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			return errors.New("postgres exited (its port taken?)")
		default:
		}
		var pool *pgxpool.Pool
		pool, err = pgxpool.New(context.Background(), url)
		if err == nil {
			var dir string
			err = pool.QueryRow(context.Background(), "SHOW data_directory").Scan(&dir)
			pool.Close()
			if err == nil && dir != data {
				return fmt.Errorf("%s is another server's (data directory %s)", url, dir)
			}
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not answer within 30 s: %v", err)
		}
	}
}

// StartRedisCluster starts three redis-servers in cluster mode (with the
// config arguments extra), joins them into a Redis Cluster of three
// primaries without replicas (redis-cli --cluster create), waits until
// every node reports the cluster ok, stops them when the test ends, and
// returns their addresses. Without redis-server or redis-cli it calls
// Missing.
func StartRedisCluster(t testing.TB, extra ...string) []string {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		Missing(t, "redis-cli is not installed (apt-get install redis-server, which brings redis-tools)")
	}
	var addrs []string
	for range 3 {
		// The bus port is chosen free too: by default it is the port plus
		// 10,000, which may be a client's ephemeral port at that moment.
		args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
			"--cluster-port", strconv.Itoa(freePort(t))}, extra...)
		addrs = append(addrs, StartRedis(t, args...))
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			info, _ := c.ClusterInfo(context.Background()).Result()
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("the Redis Cluster is not ok on %s within 30 s:\n%s", a, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	return addrs
}
