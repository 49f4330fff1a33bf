package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentpreflight/preflight/server/internal/mcpproxy"
)

// stoppableListener lets shutdown stop accepting connections before
// http.Server.Shutdown runs: once stopped, Accept returns
// http.ErrServerClosed, as it would had Shutdown closed the listener, so
// that Serve's end reads as a clean one.
type stoppableListener struct {
	net.Listener
	mu      sync.Mutex
	stopped bool
	err     error // from closing the listener
}

func (l *stoppableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		l.mu.Lock()
		stopped := l.stopped
		l.mu.Unlock()
		if stopped {
			return nil, http.ErrServerClosed
		}
	}
	return c, err
}

// Close stops accepting; a second Close returns what the first did.
func (l *stoppableListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.stopped = true
		l.err = l.Listener.Close()
	}
	return l.err
}

// drainProxy is the proxy's first step of shutdown: stop accepting
// connections, answer every request that arrives on an open connection
// with 503 and Retry-After while the requests in flight finish (for at
// most drain), then end every session, which ends their GET streams so
// that http.Server.Shutdown can finish.
func drainProxy(ln *stoppableListener, p *mcpproxy.Proxy, drain time.Duration, logger *slog.Logger) {
	ln.Close()
	logger.Info("mcp proxy: draining", "timeout", drain.String())
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := p.Drain(ctx); err != nil {
		logger.Warn("mcp proxy: requests still in flight after the drain; ending their sessions", "timeout", drain.String())
	}
	p.Close()
}
