package mcpproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestUpstreamPostNotResent holds the transport that carries the proxy's
// POSTs to an upstream to "never spend twice": a tools/call written on a
// kept connection that the upstream closes before answering may have run
// there, so it is reported as failed, never sent again on a new
// connection. (A transport of the proxy's own once resent it.)
func TestUpstreamPostNotResent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var seen atomic.Int32 // requests the upstream read whole
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, r.Body)
					if seen.Add(1) > 1 {
						return // ran the call, then the connection dropped: no answer
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
				}
			}(c)
		}
	}()
	client := &http.Client{Transport: upstreamTransport}
	post := func() (*http.Response, error) {
		return client.Post("http://"+ln.Addr().String()+"/mcp", "application/json",
			bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)))
	}
	resp, err := post()
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close() // the connection is kept for the next POST
	if resp, err := post(); err == nil {
		resp.Body.Close()
		t.Fatalf("second POST: status %d; want an error (the upstream closed without answering)", resp.StatusCode)
	}
	if n := seen.Load(); n != 2 {
		t.Fatalf("the upstream read %d requests; want 2 (the second one was sent again)", n)
	}
}
