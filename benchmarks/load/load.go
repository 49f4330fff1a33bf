// Package load drives HTTP handlers on loopback with a fixed number of
// keep-alive clients and reports requests per second and latency
// percentiles. It is the server half of the preflight benchmarks.
//
// Every run is bounded by both a request count and a duration and stops by
// itself. The generator only ever connects to loopback addresses; it refuses
// any other.
package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Config bounds one measurement. Zero fields take the defaults noted.
type Config struct {
	// Clients is the number of concurrent keep-alive connections, each
	// sending one request at a time. Zero means 8.
	Clients int
	// Duration is the measured time. Zero means 2 s.
	Duration time.Duration
	// Warmup is run before the measured time and not counted. Zero means
	// Duration/10.
	Warmup time.Duration
	// MaxRequests caps the measured requests. Zero means 1,000,000.
	MaxRequests int
}

func (c Config) withDefaults() Config {
	if c.Clients <= 0 {
		c.Clients = 8
	}
	if c.Duration <= 0 {
		c.Duration = 2 * time.Second
	}
	if c.Warmup <= 0 {
		c.Warmup = c.Duration / 10
	}
	if c.MaxRequests <= 0 {
		c.MaxRequests = 1_000_000
	}
	return c
}

// Stats is the outcome of one measurement.
type Stats struct {
	// Requests is the number of measured requests that got a 200 answer.
	Requests int
	// Elapsed is the measured wall time.
	Elapsed time.Duration
	// Latencies holds one entry per measured request, in no order.
	Latencies []time.Duration
	// WarmupRequests is the number of requests of the uncounted warm-up.
	WarmupRequests int
}

// RPS is Requests per second of Elapsed; zero when nothing ran.
func (s Stats) RPS() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Requests) / s.Elapsed.Seconds()
}

// Percentile returns the p-th percentile (0 < p <= 100) of lat by the
// nearest-rank method; zero for an empty slice. It sorts lat in place.
func Percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	rank := int(float64(len(lat))*p/100+0.999999) - 1
	rank = max(0, min(rank, len(lat)-1))
	return lat[rank]
}

// Drive posts body to path on the loopback HTTP/1.1 server at addr from
// cfg.Clients keep-alive connections until cfg.Duration has passed or
// cfg.MaxRequests were measured, after an uncounted warm-up. Any answer
// other than 200 stops the run with an error naming the status and the
// start of the answer. ctx cancels the run.
func Drive(ctx context.Context, addr, path string, body []byte, cfg Config) (Stats, error) {
	cfg = cfg.withDefaults()
	if err := checkLoopback(addr); err != nil {
		return Stats{}, err
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		path, addr, len(body))
	req.Write(body)
	wire := req.Bytes()

	conns := make([]*clientConn, cfg.Clients)
	for i := range conns {
		c, err := dial(ctx, addr)
		if err != nil {
			closeAll(conns)
			return Stats{}, err
		}
		conns[i] = c
	}
	defer closeAll(conns)

	warm, _, err := phase(ctx, conns, wire, time.Now().Add(cfg.Warmup), 1<<62, false)
	if err != nil {
		return Stats{}, fmt.Errorf("warm-up: %w", err)
	}
	start := time.Now()
	n, lat, err := phase(ctx, conns, wire, start.Add(cfg.Duration), int64(cfg.MaxRequests), true)
	elapsed := time.Since(start)
	if err != nil {
		return Stats{}, err
	}
	return Stats{Requests: n, Elapsed: elapsed, Latencies: lat, WarmupRequests: warm}, nil
}

// phase runs every connection until the deadline or until limit requests
// were started, and returns the completed count and, when record is set,
// their latencies.
func phase(ctx context.Context, conns []*clientConn, wire []byte, deadline time.Time, limit int64, record bool) (int, []time.Duration, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var (
		started atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		firstEr error
		all     []time.Duration
		total   int
	)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			n := 0
			for ctx.Err() == nil && started.Add(1) <= limit {
				t0 := time.Now()
				if err := c.roundTrip(wire); err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				n++
				if record {
					lat = append(lat, time.Since(t0))
				}
			}
			mu.Lock()
			total += n
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total, all, firstEr
}

// clientConn is one keep-alive connection of the generator.
type clientConn struct {
	conn net.Conn
	br   *bufio.Reader
}

func dial(ctx context.Context, addr string) (*clientConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &clientConn{conn: c, br: bufio.NewReaderSize(c, 32<<10)}, nil
}

// roundTrip writes one pre-encoded request and reads its whole answer.
func (c *clientConn) roundTrip(wire []byte) error {
	if err := c.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	if _, err := c.conn.Write(wire); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		resp.Body.Close()
		return fmt.Errorf("status %d: %s", resp.StatusCode, head)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.Close {
		return errors.New("the server closed the keep-alive connection")
	}
	return resp.Body.Close()
}

func closeAll(conns []*clientConn) {
	for _, c := range conns {
		if c != nil {
			c.conn.Close()
		}
	}
}

// checkLoopback refuses any address that is not a loopback IP and port.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("load: %q is not a loopback IP address; the generator only drives loopback servers", host)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("load: bad port in %q", addr)
	}
	return nil
}
