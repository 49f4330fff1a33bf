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

// Server timeouts. Bodies are at most 64 KiB, so generous read and write
// limits still bound a slow client.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second // covers facilitator verify + settle on the paid route
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 32 << 10
	shutdownTimeout   = 30 * time.Second
)

// run parses args, serves until ctx is done, then shuts down gracefully:
// it stops accepting connections and waits (up to 30 s) for requests in
// flight. It returns nil after a clean shutdown. Logs go to logOut as JSON.
func run(ctx context.Context, args []string, getenv func(string) string, logOut io.Writer) error {
	if len(args) > 0 && args[0] == "proxy" {
		return runProxy(ctx, args[1:], logOut)
	}
	opts, err := parseFlags(args, getenv, logOut)
	if err != nil {
		return err
	}
	cfg, err := opts.serverConfig()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg.Logger = logger

	ln, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           accessLog(logger, server.New(cfg)),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("listening", "addr", ln.Addr().String(), "paid", cfg.Payment != nil)
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && cfg.BaseURL == "" {
		logger.Warn("--base-url is not set on a non-loopback listener: documents and payment resource URLs " +
			"will use each request's Host header, which a client controls; set --base-url (and --site-url) in production")
	}

	return serve(ctx, srv, ln, logger, nil)
}

// serve runs srv on ln until ctx is done, then shuts it down gracefully:
// beforeShutdown (if not nil) runs first, then srv stops accepting
// connections and waits (up to 30 s) for requests in flight.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, logger *slog.Logger, beforeShutdown func()) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if beforeShutdown != nil {
		beforeShutdown()
	}
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}
