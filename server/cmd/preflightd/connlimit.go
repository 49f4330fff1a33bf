package main

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentpreflight/preflight"
	"github.com/agentpreflight/preflight/server"
)

// Every open connection costs the process a file descriptor and some
// memory (a goroutine and its buffers, about 15 KiB idle). Without a bound,
// keep-alive connections that sent one tiny request and then wait out the
// idle timeout fill the descriptor table: accept fails with "too many open
// files", a fresh client's /health times out, and a verified payment's
// /settle cannot open its outbound socket. connLimiter bounds the
// connections the API listener holds, below the descriptor limit, leaving
// room for the sockets the process opens itself (facilitator, OTLP, the
// metrics listener) and its files.
//
// A connection is waiting from its accept, and from the end of each
// response, until the first byte of its next request arrives. Past
// pressureShare of the bound, a waiting connection's read deadline (the
// idle timeout net/http sets, or the header timeout of a first request) is
// cut to the pressure idle timeout, and connections already waiting are
// given that deadline at once. At the bound, the connection that has been
// waiting longest (at least minWaitBeforeEvict) is closed to make room;
// when none has, the new connection gets a raw 503 server_busy with
// Retry-After and is closed. A connection whose request is being read or
// answered is never closed by the limiter: a paid request in flight keeps
// its connection, and its outbound facilitator socket fits in the room left
// below the descriptor limit.
type connLimiter struct {
	net.Listener
	max        int
	pressure   int           // open connections above which waiting ones get pressureIdle
	shortIdle  time.Duration // the pressure idle timeout
	refusedMsg []byte        // the raw 503, written whole
	// writeSlack is how much earlier than asked a connection's write
	// deadline may fall when an armed one is kept (writedeadline.go);
	// zero: every write deadline is set as asked.
	writeSlack time.Duration

	open atomic.Int64 // connections accepted and not yet closed

	mu        sync.Mutex
	waiting   connList // longest waiting first
	lastSweep time.Time

	refused, evicted atomic.Int64 // counts, for the log
	logger           *slog.Logger
	lastLog          atomic.Int64 // unix seconds of the last "connection bound reached" line
}

const (
	// pressureShare is the share of the bound past which waiting
	// connections get the pressure idle timeout.
	pressureShare = 0.75
	// minWaitBeforeEvict protects a connection that was just accepted or
	// just answered: its client's next bytes may be on the way.
	minWaitBeforeEvict = time.Second
	// sweepEvery bounds how often connections already waiting are given
	// the pressure deadline (a walk over all of them).
	sweepEvery = 500 * time.Millisecond
	// refusedRetryAfter is the Retry-After, in seconds, of a connection
	// refused at the bound.
	refusedRetryAfter = 1
	// fdReserveMin and fdReserveMax bound the descriptors left below the
	// limit for everything but API connections: 64 for the process's own
	// files, listeners and exporters, the metrics listener's connections
	// (metricsMaxConnections), and each possible facilitator call (one
	// socket each, plus the client's idle pool).
	fdReserveBase = 64
	// metricsMaxConnections bounds the metrics listener's connections: a
	// scraper or two, and a person with curl.
	metricsMaxConnections = 32
)

// fdLimit returns the process's soft RLIMIT_NOFILE (which the Go runtime
// raises to the hard limit at start), or 0 when it cannot be read.
func fdLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}

// fdReserve is the number of descriptors kept below the limit for
// everything but the API's connections, for a server making at most
// facilitatorCalls facilitator calls at once (0 when unpaid).
func fdReserve(facilitatorCalls int) int {
	return fdReserveBase + metricsMaxConnections + facilitatorCalls + 8 // 8: the facilitator client's idle pool
}

// newConnLimiter bounds ln to max connections (max > 0), with waiting
// connections closed after shortIdle once more than 3/4 of max are open.
func newConnLimiter(ln net.Listener, max int, shortIdle time.Duration, logger *slog.Logger) *connLimiter {
	body, _ := json.Marshal(&preflight.Error{
		Code: server.ErrorServerBusy,
		Message: "the server holds as many connections as it allows (" + strconv.Itoa(max) +
			"); nothing was read or charged; retry after " + strconv.Itoa(refusedRetryAfter) + " s",
	})
	msg := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\n" +
		"Retry-After: " + strconv.Itoa(refusedRetryAfter) + "\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nConnection: close\r\n\r\n" + string(body)
	return &connLimiter{
		Listener:   ln,
		max:        max,
		pressure:   int(float64(max) * pressureShare),
		shortIdle:  shortIdle,
		refusedMsg: []byte(msg),
		logger:     logger,
	}
}

// Accept returns the next connection within the bound; connections beyond
// it are answered 503 and closed here.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		now := time.Now()
		l.mu.Lock()
		if int(l.open.Load()) >= l.max && !l.evictLocked(now) {
			l.mu.Unlock()
			l.refuse(c, now)
			continue
		}
		n := l.open.Add(1)
		tc := &trackedConn{framedConn: framedConn{Conn: c}, l: l}
		tc.startWaitingLocked(now)
		if int(n) > l.pressure && now.Sub(l.lastSweep) >= sweepEvery {
			l.lastSweep = now
			deadline := now.Add(l.shortIdle)
			for c := l.waiting.front(); c != nil; c = c.next {
				c.shortenLocked(deadline)
			}
		}
		l.mu.Unlock()
		return tc, nil
	}
}

// evictLocked closes the connection that has waited longest, if it has
// waited at least minWaitBeforeEvict, and reports whether it did.
func (l *connLimiter) evictLocked(now time.Time) bool {
	tc := l.waiting.front()
	if tc == nil {
		return false
	}
	if now.Sub(tc.waitingSince) < minWaitBeforeEvict {
		return false
	}
	l.waiting.remove(tc)
	tc.release()
	tc.Conn.Close() // net/http's read fails and it closes the conn again: release runs once
	l.evicted.Add(1)
	return true
}

// refuse answers c with the raw 503 and closes it, and logs at most once a
// second that the bound was reached.
func (l *connLimiter) refuse(c net.Conn, now time.Time) {
	c.SetWriteDeadline(now.Add(100 * time.Millisecond)) // a fresh socket's buffer takes it at once
	c.Write(l.refusedMsg)
	c.Close()
	n := l.refused.Add(1)
	if last := l.lastLog.Load(); now.Unix() > last && l.lastLog.CompareAndSwap(last, now.Unix()) {
		l.logger.Warn("connection bound reached: new connections are answered 503 server_busy",
			"max_connections", l.max, "refused_total", n, "evicted_total", l.evicted.Load())
	}
}

// connState is the http.Server's ConnState hook: a connection whose
// response is done waits for its next request.
// (A pipelined request already buffered makes it active again without a
// read: StateActive ends the wait.)
func (l *connLimiter) connState(c net.Conn, s http.ConnState) {
	if s != http.StateIdle && s != http.StateActive {
		return
	}
	tc := tracked(c)
	if tc == nil {
		return
	}
	if s == http.StateActive && !tc.isWaiting.Load() {
		// Usually so: the request's first Read already stopped the wait.
		// Only this connection's goroutine starts a wait after its accept,
		// so the flag is current here; another goroutine only ever ends one.
		return
	}
	l.mu.Lock()
	if s == http.StateIdle {
		tc.startWaitingLocked(time.Now())
	} else {
		tc.stopWaitingLocked()
	}
	l.mu.Unlock()
}

// trackedConn is a connection accepted by a connLimiter. Through its
// framedConn it also notes a request head that has both Content-Length and
// Transfer-Encoding (see framing.go).
type trackedConn struct {
	framedConn
	l *connLimiter

	released  atomic.Bool
	isWaiting atomic.Bool // fast path of Read; inList is the truth, under l.mu

	// Under l.mu: the place in l.waiting while waiting (no allocation
	// per request, as a container/list element would be).
	inList       bool
	prev, next   *trackedConn
	waitingSince time.Time

	wd writeDeadline
}

// tracked returns the trackedConn under c, or nil.
func tracked(c net.Conn) *trackedConn {
	tc, _ := c.(*trackedConn)
	return tc
}

func (c *trackedConn) startWaitingLocked(now time.Time) {
	if c.inList || c.released.Load() {
		return
	}
	c.waitingSince = now
	c.l.waiting.pushBack(c)
	c.isWaiting.Store(true)
}

func (c *trackedConn) stopWaitingLocked() {
	if c.inList {
		c.l.waiting.remove(c)
	}
	c.isWaiting.Store(false)
}

// shortenLocked brings a waiting connection's read deadline to at most d.
func (c *trackedConn) shortenLocked(d time.Time) {
	if c.inList {
		c.Conn.SetReadDeadline(d)
	}
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.framedConn.Read(p)
	if n > 0 && c.isWaiting.Load() {
		c.l.mu.Lock()
		c.stopWaitingLocked()
		c.l.mu.Unlock()
	}
	return n, err
}

// SetReadDeadline is how net/http starts the idle timeout (and a first
// request's header timeout); under pressure a waiting connection gets the
// pressure idle timeout instead, when it is shorter.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	if c.isWaiting.Load() && int(c.l.open.Load()) > c.l.pressure {
		c.l.mu.Lock()
		defer c.l.mu.Unlock()
		if c.inList {
			if short := time.Now().Add(c.l.shortIdle); t.IsZero() || short.Before(t) {
				t = short
			}
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	c.stopWaitingLocked()
	c.l.mu.Unlock()
	c.release()
	return c.Conn.Close()
}

// release gives the connection's place back, once.
func (c *trackedConn) release() {
	if c.released.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
	}
}

// connList is a doubly linked list of trackedConns through their prev and
// next fields, oldest first; its user holds the limiter's lock.
type connList struct {
	head, tail *trackedConn
	n          int
}

// Len is the number of connections in the list.
func (q *connList) Len() int { return q.n }

func (q *connList) front() *trackedConn { return q.head }

func (q *connList) pushBack(c *trackedConn) {
	c.prev, c.next, c.inList = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
	q.n++
}

func (q *connList) remove(c *trackedConn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.prev, c.next, c.inList = nil, nil, false
	q.n--
}
