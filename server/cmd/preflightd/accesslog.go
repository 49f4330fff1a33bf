package main

import (
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentpreflight/preflight/strictjson"
)

// accessFlushInterval bounds how long an access log line waits in memory
// before it is written. Lines are written in batches instead of one system
// call per request: on one core that call, with slog's encoding, cost as
// much as a third of a small request's CPU time (see BenchmarkServeLoopback).
// A tenth of a second is too short for a person watching the log to notice;
// a crash loses at most that much of the access log, never any other line.
const accessFlushInterval = 100 * time.Millisecond

// accessBufferLimit is how many bytes of pending access lines are written
// at once without waiting for the interval.
const accessBufferLimit = 64 << 10

// logSink is preflightd's log output. Every line reaches out whole and in
// the order logged. An access line is kept in memory until the first of:
// accessFlushInterval has passed, accessBufferLimit bytes are pending,
// another line is logged, or Flush is called. Any other line (a slog line
// written through Write) is written at once, after the pending access
// lines. It is safe for concurrent use.
type logSink struct {
	out      io.Writer
	interval time.Duration

	mu      sync.Mutex
	pending []byte // access lines not yet written
	spare   []byte // the previous pending buffer, reused
	timer   *time.Timer
	armed   bool // the timer will flush pending

	stamp stampCache // under mu
}

// stampCache keeps the parts of the last access line's timestamp that
// change once a second at most: the date and time to the second, and the
// zone. Offsets change only at whole seconds, so within one second and one
// Location both are the same for every instant.
type stampCache struct {
	sec    int64
	loc    *time.Location
	valid  bool
	prefix []byte // "2006-01-02T15:04:05"
	zone   []byte // "Z" or "±hh:mm"
}

// appendTime appends t as t.AppendFormat(b, time.RFC3339Nano) does
// (TestAccessStampMatchesFormat), formatting the date and zone once a
// second instead of on every line.
func (c *stampCache) appendTime(b []byte, t time.Time) []byte {
	if sec, loc := t.Unix(), t.Location(); !c.valid || sec != c.sec || loc != c.loc {
		c.prefix = t.AppendFormat(c.prefix[:0], "2006-01-02T15:04:05")
		c.zone = t.AppendFormat(c.zone[:0], "Z07:00")
		c.sec, c.loc, c.valid = sec, loc, true
	}
	b = append(b, c.prefix...)
	if ns := t.Nanosecond(); ns != 0 {
		// RFC3339Nano's ".999999999": nine digits, trailing zeros dropped.
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, c.zone...)
}

func newLogSink(out io.Writer) *logSink {
	s := &logSink{out: out, interval: accessFlushInterval}
	s.timer = time.AfterFunc(time.Hour, s.timerFlush)
	s.timer.Stop()
	return s
}

// Write writes p (one or more whole lines, as slog's handlers write them)
// after every pending access line.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		s.pending = append(s.pending, p...)
		s.writeLocked()
		return len(p), nil
	}
	return s.out.Write(p)
}

// Flush writes every pending access line.
func (s *logSink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeLocked()
}

func (s *logSink) timerFlush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	s.writeLocked()
}

// writeLocked writes the pending lines in one call. A failed write loses
// them, as a failed slog write loses its line.
func (s *logSink) writeLocked() {
	if len(s.pending) == 0 {
		return
	}
	s.out.Write(s.pending)
	s.pending, s.spare = s.spare[:0], s.pending[:0]
	if cap(s.pending) < cap(s.spare) {
		s.pending, s.spare = s.spare, s.pending
	}
}

// accessLine is what one access log line says.
type accessLine struct {
	end       time.Time
	method    string
	path      string
	status    int
	bytes     int64
	duration  time.Duration
	requestID string
}

// slogEscaping is how slog's JSONHandler escapes a string: HTML characters
// kept, \b and \f as \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped.
const slogEscaping = strictjson.EscapeLineSeparators | strictjson.ReplaceInvalidUTF8 | strictjson.HexBackspaceFormFeed

// logAccess appends the access line of a delivered response, encoded
// exactly as slog's JSONHandler encodes
// logger.LogAttrs(ctx, slog.LevelInfo, "request", method, path, status,
// bytes, duration_ms, request_id) (TestAccessLineMatchesSlog).
func (s *logSink) logAccess(l *accessLine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.pending
	b = append(b, `{"time":"`...)
	b = s.stamp.appendTime(b, l.end)
	b = append(b, `","level":"INFO","msg":"request","method":"`...)
	b, _ = strictjson.AppendEscaped(b, l.method, slogEscaping)
	b = append(b, `","path":"`...)
	b, _ = strictjson.AppendEscaped(b, l.path, slogEscaping)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, l.bytes, 10)
	b = append(b, `,"duration_ms":`...)
	b = appendMillis(b, l.duration)
	b = append(b, `,"request_id":"`...)
	b, _ = strictjson.AppendEscaped(b, l.requestID, slogEscaping)
	b = append(b, "\"}\n"...)
	s.pending = b
	switch {
	case len(b) >= accessBufferLimit:
		s.writeLocked()
	case !s.armed:
		s.armed = true
		s.timer.Reset(s.interval)
	}
}

// appendMillis appends d in milliseconds with microsecond resolution, as
// slog (through encoding/json) writes float64(d.Microseconds())/1000: the
// shortest decimal, never an exponent (the value is 0 or at least 0.001,
// far below 1e21).
//
// Below 2^40 µs (12 days), float64's spacing near µs/1000 is far under
// 0.001, so no other decimal of at most three fractional digits rounds to
// the same float64: the shortest decimal AppendFloat writes is the
// quotient itself (whole milliseconds, then at most three digits with
// trailing zeros dropped), which integer arithmetic writes faster. Any
// other duration goes through AppendFloat (TestAppendMillisMatchesFloat).
func appendMillis(b []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us < 0 || us >= 1<<40 {
		return strconv.AppendFloat(b, float64(us)/1000, 'f', -1, 64)
	}
	b = strconv.AppendInt(b, us/1000, 10)
	if frac := us % 1000; frac != 0 {
		digits := [4]byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := 4
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, digits[:n]...)
	}
	return b
}

// accessLog wraps next with one log line per request: method, path, status,
// response bytes, duration and the request id that the server's handler
// chose (a sane incoming X-Request-Id, else a random one) and sent back in
// the X-Request-Id header; the handler's own log lines carry the same id.
// Bodies, query strings and header values are never logged. Lines go to
// sink (see logSink for when they are written).
//
// A response the server could not deliver (the client left, or the write
// timeout passed) is logged through logger, at warn level, with
// "delivered": false, the status the handler meant to send in
// "intended_status" and "status" 0: never as the status the client did not
// get. Delivery is checked by flushing the response once the handler
// returns, when the response declares its Content-Length (every JSON
// answer of package server does), so that flushing never changes its framing.
func accessLog(sink *logSink, logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := recorders.Get().(*statusRecorder)
		*rec = statusRecorder{ResponseWriter: w}
		defer recorders.Put(rec)
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		writeErr := rec.err
		h := w.Header() // read with canonical keys, as Header.Get would after canonicalizing
		if writeErr == nil && len(h["Content-Length"]) > 0 && h["Content-Length"][0] != "" {
			writeErr = flush(w)
		}
		end := time.Now()
		var id string
		if v := h["X-Request-Id"]; len(v) > 0 {
			id = v[0]
		}
		written := rec.bytes
		*rec = statusRecorder{} // keep nothing of this request in the pool
		if writeErr == nil {
			sink.logAccess(&accessLine{end: end, method: r.Method, path: r.URL.Path, status: status,
				bytes: written, duration: end.Sub(start), requestID: id})
			return
		}
		logger.LogAttrs(r.Context(), slog.LevelWarn, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", 0),
			slog.Int64("bytes", written),
			slog.Float64("duration_ms", float64(end.Sub(start).Microseconds())/1000),
			slog.String("request_id", id),
			slog.Bool("delivered", false),
			slog.Int("intended_status", status),
			slog.String("write_error", writeErr.Error()))
	})
}

// recorders keeps statusRecorders between requests: the access log
// allocates nothing per request.
var recorders = sync.Pool{New: func() any { return new(statusRecorder) }}

// statusRecorder remembers the status and size of a response and the first
// write error.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	err    error
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer (flush,
// deadlines).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// flush flushes w as http.ResponseController's Flush does (FlushError, else
// Flush, else the writer w unwraps to), without allocating a controller.
func flush(w http.ResponseWriter) error {
	for {
		switch t := w.(type) {
		case interface{ FlushError() error }:
			return t.FlushError()
		case http.Flusher:
			t.Flush()
			return nil
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return http.ErrNotSupported
		}
	}
}
