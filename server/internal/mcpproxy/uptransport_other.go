//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package mcpproxy

import "net/http"

// newUpstreamTransport returns base: the transport that writes and reads
// on the caller's goroutine (uptransport.go) needs a non-blocking peek at
// a socket, which this system does not get.
func newUpstreamTransport(base *http.Transport) http.RoundTripper { return base }
