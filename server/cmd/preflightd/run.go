package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/agentpreflight/preflight/server"
)

// maxHeaderBytes bounds a request's headers. The timeouts are flags
// (opsflags.go); bodies are at most 64 KiB, so generous read and write
// limits still bound a slow client.
const maxHeaderBytes = 32 << 10

// run parses args, serves until ctx is done, then shuts down gracefully:
// it stops accepting connections and waits (up to --shutdown-timeout) for
// requests in flight, a paid one's settlement included, then flushes traces.
// It returns nil after a clean shutdown. -h writes the usage to stdout. Logs
// go to logOut as JSON; when logOut is a terminal, a few lines for a person
// saying where the docs, health check and MCP endpoint are come first.
// "proxy" as the first argument runs the guarding MCP proxy.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, logOut io.Writer) error {
	if len(args) > 0 && args[0] == "proxy" {
		return runProxy(ctx, args[1:], getenv, stdout, logOut)
	}
	opts, err := parseFlags(args, getenv, stdout)
	if err != nil {
		return err
	}
	cfg, err := opts.serverConfig()
	if err != nil {
		return err
	}
	maxConns, err := opts.ops.connectionBound(fdLimit(), cfg.Payment != nil)
	if err != nil {
		return err
	}
	setHeapFloor(getenv)
	sink := newLogSink(logOut)
	defer sink.Flush()
	logger := slog.New(slog.NewJSONHandler(sink, nil))
	cfg.Logger = logger
	cfg.Drain = &server.Drain{}
	tp, err := startTracing(ctx, getenv, logger)
	if err != nil {
		return err
	}
	if tp != nil {
		cfg.TracerProvider = tp
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(fctx); err != nil {
				logger.Warn("traces could not all be flushed", "error", err.Error())
			}
		}()
	}
	var metrics *metricsServer
	if opts.ops.metricsAddr != "" {
		reg := newMetricsRegistry()
		cfg.Metrics = reg
		if metrics, err = startMetrics(opts.ops.metricsAddr, reg, logger); err != nil {
			return err
		}
		defer metrics.stop()
	}

	bound, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return err
	}
	ln := newConnLimiter(bound, maxConns, min(opts.ops.pressureIdleTimeout, opts.ops.idleTimeout), logger)
	ln.writeSlack = opts.ops.writeTimeout / 100
	srv := &http.Server{
		Handler:           accessLog(sink, logger, rejectAmbiguousFraming(server.New(cfg))),
		ReadHeaderTimeout: opts.ops.readHeaderTimeout,
		ReadTimeout:       opts.ops.readTimeout,
		WriteTimeout:      opts.ops.writeTimeout,
		IdleTimeout:       opts.ops.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ConnState:         ln.connState,
		ConnContext:       connContext,
	}
	if isTerminal(logOut) {
		printWelcome(logOut, ln.Addr(), cfg.Payment != nil)
	}
	receiptKey := ""
	if cfg.Receipts != nil {
		receiptKey = cfg.Receipts.KeyID()
	}
	logger.Info("listening", "addr", ln.Addr().String(), "paid", cfg.Payment != nil, "tracing", tp != nil, "max_connections", maxConns, "receipt_kid", receiptKey)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && cfg.BaseURL == "" {
		logger.Warn("--base-url is not set on a non-loopback listener: documents and payment resource URLs " +
			"will use each request's Host header, which a client controls; set --base-url (and --site-url) in production")
	}

	return serve(ctx, srv, ln, logger, opts.ops.shutdownTimeout, cfg.Drain.Start, cfg.Drain.Settling)
}

// serve runs srv on ln until ctx is done, then shuts it down gracefully:
// beforeShutdown (if not nil) runs first, then srv stops accepting
// connections and waits (up to grace) for requests in flight. If the grace
// runs out, every request id that settling (if not nil) returns is logged
// as a payment whose outcome is unknown. A failure is logged as JSON and
// returned as a reportedError.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, logger *slog.Logger, grace time.Duration, beforeShutdown func(), settling func() []string) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		logger.Error("stopped: the listener failed", "error", err.Error())
		return reportedError{err}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if beforeShutdown != nil {
		beforeShutdown() // first: from the "shutting down" line on, new payments are refused
	}
	logger.Info("shutting down", "timeout", grace.String())
	if err := srv.Shutdown(sctx); err != nil {
		if settling != nil {
			for _, id := range settling() {
				logger.Error("exiting with a payment in settlement, outcome unknown", "request_id", id, "timeout", grace.String())
			}
		}
		logger.Error("stopped before every request in flight finished", "error", err.Error(), "timeout", grace.String())
		return reportedError{err}
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		logger.Error("stopped: the listener failed", "error", err.Error())
		return reportedError{err}
	}
	logger.Info("stopped")
	return nil
}

// reportedError is a failure already logged as a JSON line; main exits 1
// without printing it again.
type reportedError struct{ err error }

func (e reportedError) Error() string { return e.err.Error() }
func (e reportedError) Unwrap() error { return e.err }
