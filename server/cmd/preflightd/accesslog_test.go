package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// slogAccessLine is the access line as slog's JSONHandler writes it for
// the same fields: what the access log wrote before it encoded its lines
// itself, and what it must still write byte for byte.
func slogAccessLine(l *accessLine) []byte {
	var buf bytes.Buffer
	rec := slog.NewRecord(l.end, slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("method", l.method),
		slog.String("path", l.path),
		slog.Int("status", l.status),
		slog.Int64("bytes", l.bytes),
		slog.Float64("duration_ms", float64(l.duration.Microseconds())/1000),
		slog.String("request_id", l.requestID))
	slog.NewJSONHandler(&buf, nil).Handle(context.Background(), rec)
	return buf.Bytes()
}

// encodeAccess returns the line the sink writes for l.
func encodeAccess(l *accessLine) []byte {
	var out bytes.Buffer
	s := newLogSink(&out)
	s.logAccess(l)
	s.Flush()
	return out.Bytes()
}

func TestAccessLineMatchesSlog(t *testing.T) {
	utc := time.Date(2026, 11, 27, 8, 3, 20, 123456789, time.UTC)
	east := time.FixedZone("east", 5*3600+30*60)
	lines := []accessLine{
		{end: utc, method: "POST", path: "/v0.2/preflight/tool-call", status: 200, bytes: 412, duration: 123456 * time.Nanosecond, requestID: "0123456789abcdef0123456789abcdef"},
		{end: utc.Truncate(time.Second), method: "GET", path: "/", status: 404, bytes: 0, duration: 0, requestID: "a"},
		{end: utc.In(east), method: "HEAD", path: "/docs", status: 200, duration: 999 * time.Nanosecond, requestID: "x"},
		{end: utc.Add(time.Millisecond), method: "PATCH", path: "/a\"b\\c\nd\re\tf\x00\x1f\x7f<>&", status: 405, bytes: 1 << 40, duration: 90 * time.Second, requestID: "id:+/="},
		{end: utc, method: "M\xff", path: "/\u2028\u2029é日本\xc3", status: 413, duration: time.Millisecond, requestID: ""},
		{end: utc, method: "POST", path: strings.Repeat("/ü", 300), status: 500, duration: 1234567 * time.Microsecond, requestID: "r"},
	}
	for _, l := range lines {
		if diff := cmp.Diff(string(slogAccessLine(&l)), string(encodeAccess(&l))); diff != "" {
			t.Errorf("%q: line differs from slog's (-slog +sink):\n%s", l.path, diff)
		}
	}
}

func FuzzAccessLine(f *testing.F) {
	f.Add("POST", "/check-request", "abc", int64(123456), 200, int64(99))
	f.Add("G\x00T", "/\u2028\xff\"", "", int64(0), 0, int64(-1))
	f.Fuzz(func(t *testing.T, method, path, id string, nanos int64, status int, n int64) {
		if nanos < 0 {
			nanos = -nanos
		}
		l := accessLine{end: time.Unix(0, nanos*7919).UTC(), method: method, path: path, status: status, bytes: n,
			duration: time.Duration(nanos), requestID: id}
		if want, got := slogAccessLine(&l), encodeAccess(&l); !bytes.Equal(want, got) {
			t.Errorf("line differs from slog's:\nslog %s\nsink %s", want, got)
		}
	})
}

// TestLogSinkOrder: lines reach the output whole and in the order logged;
// an access line waits at most the flush interval; any other line is
// written at once, after the pending access lines.
func TestLogSinkOrder(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	s := newLogSink(&lockedWriter{w: &out, mu: &mu})
	s.interval = 50 * time.Millisecond
	logger := slog.New(slog.NewJSONHandler(s, nil))
	read := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	l := accessLine{end: time.Now(), method: "GET", path: "/1", status: 200, requestID: "a"}
	s.logAccess(&l)
	l.path = "/2"
	s.logAccess(&l)
	if got := read(); got != "" {
		t.Fatalf("access lines written at once: %q", got)
	}
	logger.Info("other")
	lines := strings.Split(strings.TrimSuffix(read(), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"path":"/1"`) || !strings.Contains(lines[1], `"path":"/2"`) || !strings.Contains(lines[2], `"msg":"other"`) {
		t.Fatalf("after another line, the output is %q; want /1, /2, other", lines)
	}
	l.path = "/3"
	s.logAccess(&l)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(read(), `"path":"/3"`) {
		if time.Now().After(deadline) {
			t.Fatal("an access line was not written within 5 s of the 50 ms interval")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for len(read()) < accessBufferLimit { // the limit writes without waiting
		s.interval = time.Hour
		s.logAccess(&l)
	}
	if n := strings.Count(read(), "\n"); n != strings.Count(read(), `{"time"`) {
		t.Errorf("a line was cut: %d newlines, %d lines", n, strings.Count(read(), `{"time"`))
	}
}

// slogAccessLog is the access log as it was before logSink: one slog
// line, one write, per request. Kept for BenchmarkServe's comparison.
func slogAccessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		if rec.err == nil && w.Header().Get("Content-Length") != "" {
			flush(w)
		}
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", status),
			slog.Int64("bytes", rec.bytes),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.String("request_id", w.Header().Get("X-Request-Id")))
	})
}

// TestAccessStampMatchesFormat logs through one sink, so that its cached
// date and zone are reused and replaced: lines in one second, across
// seconds, days and years, in other zones and across a daylight-saving
// change must each carry t.AppendFormat(RFC3339Nano).
func TestAccessStampMatchesFormat(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("fallback", -5*3600) // no zone database: fixed zones still switch the cache
	}
	base := time.Date(2026, 3, 8, 6, 59, 58, 0, time.UTC) // 01:59:58 in New York, two seconds before its clocks jump
	var times []time.Time
	for _, d := range []time.Duration{0, 1, 10, 100 * time.Millisecond, time.Second - 1, time.Second, time.Second + 120*time.Microsecond,
		2 * time.Second, 2*time.Second + 5, 3 * time.Second, 24 * time.Hour, 366 * 24 * time.Hour} {
		times = append(times, base.Add(d), base.Add(d).In(ny), base.Add(d).In(time.FixedZone("x", 5*3600+30*60)), base.Add(d))
	}
	times = append(times, time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 100000000, time.UTC), time.Date(2026, 11, 27, 8, 3, 20, 123456789, time.Local))
	var out bytes.Buffer
	s := newLogSink(&out)
	for _, tm := range times {
		s.logAccess(&accessLine{end: tm, method: "GET", path: "/", status: 200})
		s.Flush()
		line := out.String()
		out.Reset()
		want := `{"time":"` + tm.Format(time.RFC3339Nano) + `",`
		if !strings.HasPrefix(line, want) {
			t.Errorf("%v: line %q, want it to start %q", tm, line, want)
		}
	}
}

// TestAppendMillisMatchesFloat holds appendMillis to what slog writes,
// strconv.AppendFloat of the microseconds over 1000, on both sides of its
// fast path's bound.
func TestAppendMillisMatchesFloat(t *testing.T) {
	us := []int64{0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1010, 1100, 12345, 999999, 1000000, 1<<40 - 1, 1 << 40, 1<<40 + 1, 1<<53 + 1, -1, -1500}
	for i := int64(1); i < 1<<40; i = i*3 + 7 {
		us = append(us, i, i*1000, i*1000+1)
	}
	for _, u := range us {
		d := time.Duration(u) * time.Microsecond
		if u > int64(1<<62)/1000 || u < -int64(1<<62)/1000 {
			continue
		}
		want := strconv.AppendFloat(nil, float64(d.Microseconds())/1000, 'f', -1, 64)
		if got := appendMillis(nil, d); string(got) != string(want) {
			t.Errorf("%d µs: %s, AppendFloat writes %s", u, got, want)
		}
	}
}
