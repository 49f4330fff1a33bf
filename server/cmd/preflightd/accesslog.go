package main

import (
	"log/slog"
	"net/http"
	"time"
)

// accessLog wraps next with one log line per request: method, path, status,
// response bytes, duration and the request id that the server's handler
// chose (a sane incoming X-Request-Id, else a random one) and sent back in
// the X-Request-Id header; the handler's own log lines carry the same id.
// Bodies, query strings and header values are never logged.
//
// A response the server could not deliver (the client left, or the write
// timeout passed) is logged with "delivered": false, the status the handler
// meant to send in "intended_status" and "status" 0: never as the status the
// client did not get. Delivery is checked by flushing the response once the
// handler returns, when the response declares its Content-Length (every JSON
// answer of package server does), so that flushing never changes its framing.
func accessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		writeErr := rec.err
		if writeErr == nil && w.Header().Get("Content-Length") != "" {
			writeErr = flush(w)
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", status),
			slog.Int64("bytes", rec.bytes),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.String("request_id", w.Header().Get("X-Request-Id")),
		}
		level := slog.LevelInfo
		if writeErr != nil {
			level = slog.LevelWarn
			attrs[2] = slog.Int("status", 0)
			attrs = append(attrs,
				slog.Bool("delivered", false),
				slog.Int("intended_status", status),
				slog.String("write_error", writeErr.Error()))
		}
		logger.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

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
