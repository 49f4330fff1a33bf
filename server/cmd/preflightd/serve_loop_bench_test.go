package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/server"
	"github.com/prometheus/client_golang/prometheus"
)

// loopVariant is one way of serving the comparison over loopback TCP.
type loopVariant struct {
	name  string
	build func(tb testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener)
}

// plainServe serves on the listener as it is, with no hook.
func plainServe(*http.Server, net.Listener) net.Listener { return nil }

// preflightdServe configures srv and ln as run does: connection bound,
// framing scanner, connection-state hook and the default timeouts.
func preflightdServe(srv *http.Server, ln net.Listener) net.Listener {
	ops := defaultOps()
	cl := newConnLimiter(ln, defaultMaxConnections, ops.pressureIdleTimeout, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	cl.writeSlack = ops.writeTimeout / 100
	srv.ReadHeaderTimeout = ops.readHeaderTimeout
	srv.ReadTimeout = ops.readTimeout
	srv.WriteTimeout = ops.writeTimeout
	srv.IdleTimeout = ops.idleTimeout
	srv.MaxHeaderBytes = maxHeaderBytes
	srv.ConnState = cl.connState
	srv.ConnContext = connContext
	return cl
}

// logFile is a fresh file in the test's directory, as preflightd's log
// usually ends up in one.
func logFile(tb testing.TB) *os.File {
	f, err := os.Create(filepath.Join(tb.TempDir(), "access.log"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// fileAccessLog wraps h in the access log as run does, writing to a file.
func fileAccessLog(tb testing.TB, h http.Handler) http.Handler {
	sink := newLogSink(logFile(tb))
	tb.Cleanup(sink.Flush)
	return accessLog(sink, slog.New(slog.NewJSONHandler(sink, nil)), h)
}

// loopVariants take preflightd apart piece by piece: the floor; the
// handler of package server alone; with the framing check, connection
// bound and timeouts of run; then with the access log to a file (all of
// preflightd as it runs by default); then with metrics.
func loopVariants() []loopVariant {
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := func() server.Config { return server.Config{Logger: quiet, Drain: &server.Drain{}} }
	return []loopVariant{
		{"floor", func(testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener) {
			return bareFloor(), plainServe
		}},
		{"handler", func(testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener) {
			return server.New(cfg()), plainServe
		}},
		{"handler+conn", func(testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener) {
			return rejectAmbiguousFraming(server.New(cfg())), preflightdServe
		}},
		{"handler+timeouts", func(testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener) {
			return server.New(cfg()), func(srv *http.Server, ln net.Listener) net.Listener {
				ops := defaultOps()
				srv.ReadHeaderTimeout = ops.readHeaderTimeout
				srv.ReadTimeout = ops.readTimeout
				srv.WriteTimeout = ops.writeTimeout
				srv.IdleTimeout = ops.idleTimeout
				return nil
			}
		}},
		{"handler+limiter", func(testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener) {
			return rejectAmbiguousFraming(server.New(cfg())), func(srv *http.Server, ln net.Listener) net.Listener {
				cl := newConnLimiter(ln, defaultMaxConnections, 5*time.Second, quiet)
				srv.ConnState = cl.connState
				srv.ConnContext = connContext
				return cl
			}
		}},
		{"preflightd-slog-log", func(tb testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener) {
			return slogAccessLog(slog.New(slog.NewJSONHandler(logFile(tb), nil)), rejectAmbiguousFraming(server.New(cfg()))), preflightdServe
		}},
		{"preflightd", func(tb testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener) {
			return fileAccessLog(tb, rejectAmbiguousFraming(server.New(cfg()))), preflightdServe
		}},
		{"preflightd+metrics", func(tb testing.TB) (http.Handler, func(*http.Server, net.Listener) net.Listener) {
			c := cfg()
			c.Metrics = prometheus.NewRegistry()
			return fileAccessLog(tb, rejectAmbiguousFraming(server.New(c))), preflightdServe
		}},
	}
}

// BenchmarkServeLoopback measures each variant of loopVariants over real
// loopback connections: 16 keep-alive connections, each with one request
// in flight, from the benchmark's own goroutines (their cost is the same
// for every variant). ns/op is wall time per request at that concurrency,
// cpu-ns/op the process's CPU time (server and clients) per request;
// compare the variants side by side in one run.
func BenchmarkServeLoopback(b *testing.B) {
	bodies := []struct{ name, path, body string }{
		{"decision", "/v0.2/preflight/tool-call", benchDecisionBody},
		{"email-check", "/check-request", benchEmailBody},
	}
	for _, bd := range bodies {
		for _, v := range loopVariants() {
			b.Run(bd.name+"/"+v.name, func(b *testing.B) {
				h, wrap := v.build(b)
				addr := serveLoop(b, h, wrap)
				driveLoop(b, addr, bd.path, []byte(bd.body), 16)
			})
		}
	}
}

// serveLoop serves h on a loopback port until the benchmark ends.
func serveLoop(tb testing.TB, h http.Handler, wrap func(*http.Server, net.Listener) net.Listener) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	served := ln
	if l := wrap(srv, ln); l != nil {
		served = l
	}
	go srv.Serve(served)
	tb.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// driveLoop sends b.N requests over conns connections and fails on any
// answer but 200.
func driveLoop(b *testing.B, addr, path string, body []byte, conns int) {
	wire := []byte(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, addr, len(body), body))
	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		cs[i] = c
		if err := roundTrip(c, bufio.NewReader(c), wire); err != nil { // connect and warm
			b.Fatal(err)
		}
	}
	var left atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := selfCPU()
	left.Store(int64(b.N))
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(c, 16<<10)
			for left.Add(-1) >= 0 {
				if err := roundTrip(c, br, wire); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(selfCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// selfCPU is the process's user plus system CPU time so far, in
// nanoseconds: with the machine shared, CPU time per request is steadier
// than wall time.
func selfCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// roundTrip writes one request and reads its answer, which must be a 200
// with a Content-Length.
func roundTrip(c net.Conn, br *bufio.Reader, wire []byte) error {
	if _, err := c.Write(wire); err != nil {
		return err
	}
	status, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("status line %q", status)
	}
	n := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if n < 0 {
		return fmt.Errorf("no Content-Length")
	}
	_, err = br.Discard(n)
	return err
}
