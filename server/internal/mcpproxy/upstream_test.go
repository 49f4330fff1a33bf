package mcpproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testTransport returns the transport the proxy carries its upstream
// requests with when no client is given (upstreamHTTPTransport), tuned
// by tune if not nil; its idle connections close when the test ends.
// The tests of misbehaving upstreams below hold it to what the proxy
// relies on.
func testTransport(t *testing.T, tune func(*http.Transport)) *http.Transport {
	rt := upstreamHTTPTransport()
	if tune != nil {
		tune(rt)
	}
	t.Cleanup(rt.CloseIdleConnections)
	return rt
}

// rawServer is an upstream on a raw listener: each request's head is read
// with http.ReadRequest, counted by its X-Req header, and handed to
// handle, which answers on the connection as it likes (its body unread)
// and reports whether the connection goes on.
type rawServer struct {
	ln     net.Listener
	conns  atomic.Int32 // connections accepted
	mu     sync.Mutex
	seen   map[string]int // X-Req: request heads read
	handle func(req *http.Request, br *bufio.Reader, c net.Conn) bool
}

func startRaw(t *testing.T, handle func(req *http.Request, br *bufio.Reader, c net.Conn) bool) *rawServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, seen: map[string]int{}, handle: handle}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			wg.Go(func() {
				defer c.Close()
				go func() { <-t.Context().Done(); c.Close() }()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.seen[req.Header.Get("X-Req")]++
					s.mu.Unlock()
					if !s.handle(req, br, c) {
						return
					}
				}
			})
		}
	})
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() + "/mcp" }

func (s *rawServer) times(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[id]
}

// answerOK writes a 200 with body after reading req's body.
func answerOK(req *http.Request, c net.Conn, body string) bool {
	io.Copy(io.Discard, req.Body)
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return true
}

// postID posts body to url with X-Req id and returns the answer's body.
func postID(ctx context.Context, rt http.RoundTripper, url, id string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Req", id)
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b, err
}

const upCallBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`

// TestUpstreamNeverResends: a kept connection that the upstream
// closes at any point of the next request's exchange never gets that
// request sent twice. Closed before the request was written (and seen
// closed), the request goes on a new connection and succeeds; closed
// after any of it may have been read, the caller gets an error and the
// upstream saw the request once.
func TestUpstreamNeverResends(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 256<<10) // still being written when the upstream closes
	for _, c := range []struct {
		name    string
		body    []byte
		second  func(req *http.Request, br *bufio.Reader, c net.Conn) bool // the second request's handling
		closeAt bool                                                       // the first answer closes the connection after it
		wantOK  bool                                                       // the second request succeeds
	}{
		{name: "closed before the request", closeAt: true, wantOK: true,
			second: func(req *http.Request, _ *bufio.Reader, c net.Conn) bool { return answerOK(req, c, "{}") }},
		{name: "closed after part of the request", body: big,
			second: func(req *http.Request, _ *bufio.Reader, _ net.Conn) bool {
				io.CopyN(io.Discard, req.Body, 1000)
				return false
			}},
		{name: "closed after the request, before the answer",
			second: func(req *http.Request, _ *bufio.Reader, _ net.Conn) bool {
				io.Copy(io.Discard, req.Body)
				return false
			}},
		{name: "closed mid-head",
			second: func(req *http.Request, _ *bufio.Reader, c net.Conn) bool {
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: appli")
				return false
			}},
		{name: "closed mid-body, length",
			second: func(req *http.Request, _ *bufio.Reader, c net.Conn) bool {
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":")
				return false
			}},
		{name: "closed mid-body, chunked",
			second: func(req *http.Request, _ *bufio.Reader, c net.Conn) bool {
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n7\r\nevent: ")
				return false
			}},
		{name: "reset after the request",
			second: func(req *http.Request, _ *bufio.Reader, c net.Conn) bool {
				io.Copy(io.Discard, req.Body)
				c.(*net.TCPConn).SetLinger(0)
				return false
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := testTransport(t, nil)
			closed := make(chan struct{})
			s := startRaw(t, func(req *http.Request, br *bufio.Reader, conn net.Conn) bool {
				switch req.Header.Get("X-Req") {
				case "1":
					answerOK(req, conn, "{}")
					if c.closeAt {
						conn.Close()
						close(closed)
						return false
					}
					return true
				case "2":
					return c.second(req, br, conn)
				}
				return answerOK(req, conn, "{}")
			})
			ctx := t.Context()
			if _, _, err := postID(ctx, rt, s.url(), "1", []byte(upCallBody)); err != nil {
				t.Fatal(err)
			}
			if c.closeAt {
				<-closed
				time.Sleep(100 * time.Millisecond) // the close reaches the client (and http.Transport notices it)
			}
			body := c.body
			if body == nil {
				body = []byte(upCallBody)
			}
			resp, got, err := postID(ctx, rt, s.url(), "2", body)
			switch {
			case c.wantOK && err != nil:
				t.Errorf("second request: %v; want its answer on a new connection", err)
			case c.wantOK && string(got) != "{}":
				t.Errorf("second request answered %q", got)
			case !c.wantOK && err == nil:
				t.Errorf("second request: status %d, body %q; want an error", resp.StatusCode, got)
			}
			// A third request on a new connection: any resend of the
			// second would have come before it is answered.
			if _, _, err := postID(ctx, rt, s.url(), "3", []byte(upCallBody)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			if n := s.times("2"); n != 1 {
				t.Errorf("the upstream read the second request %d times; want once", n)
			}
		})
	}
}

// TestUpstreamAnswers: answers an upstream may give, and what
// the caller gets of them: the body, or an error; and whether the
// connection was kept for the next request (counted by the connections
// the upstream accepted for two requests).
func TestUpstreamAnswers(t *testing.T) {
	for _, c := range []struct {
		name     string
		response string // written after the request is read; %d is the first request's
		wantBody string // "" with wantErr
		wantErr  string
		conns    int32 // accepted for two requests
	}{
		{name: "length", response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", wantBody: "{}", conns: 1},
		{name: "chunked", response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\n\r\n", wantBody: "{}", conns: 1},
		{name: "chunked with trailer", response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\n{}\r\n0\r\nX-T: 1\r\n\r\n", wantBody: "{}", conns: 1},
		{name: "1xx then 200", response: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", wantBody: "{}", conns: 1},
		{name: "no body", response: "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", wantBody: "", conns: 1},
		{name: "204", response: "HTTP/1.1 204 No Content\r\n\r\n", wantBody: "", conns: 1},
		{name: "Connection: close", response: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", wantBody: "{}", conns: 2},
		{name: "HTTP/1.0", response: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", wantBody: "{}", conns: 2},
		{name: "HTTP/1.0 keep-alive", response: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}", wantBody: "{}", conns: 1},
		{name: "unsolicited bytes after the answer", response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n\"stale\"", wantBody: "{}", conns: 2},
		{name: "garbage", response: "garbage\r\n\r\n", wantErr: "malformed HTTP", conns: 2},
		{name: "body longer than its length", response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}}", wantBody: "{}", conns: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := testTransport(t, nil)
			s := startRaw(t, func(req *http.Request, _ *bufio.Reader, conn net.Conn) bool {
				io.Copy(io.Discard, req.Body)
				if req.Header.Get("X-Req") == "1" {
					io.WriteString(conn, c.response)
					return true
				}
				return answerOK(req, conn, "second")
			})
			_, got, err := postID(t.Context(), rt, s.url(), "1", []byte(upCallBody))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("got %q, %v; want an error with %q", got, err, c.wantErr)
				}
			} else if err != nil || string(got) != c.wantBody {
				t.Errorf("got %q, %v; want %q", got, err, c.wantBody)
			}
			time.Sleep(10 * time.Millisecond) // bytes after the answer reach the client
			if _, got, err := postID(t.Context(), rt, s.url(), "2", []byte(upCallBody)); err != nil || string(got) != "second" {
				t.Errorf("next request: %q, %v; want its own answer", got, err)
			}
			if n := s.conns.Load(); n != c.conns {
				t.Errorf("%d connections for two requests; want %d", n, c.conns)
			}
		})
	}
}

// TestUpstreamUnsolicitedLater: bytes an upstream sends on a kept
// connection after the answer was read (an answer to nothing) are never
// taken for the next request's answer: the connection is dropped.
func TestUpstreamUnsolicitedLater(t *testing.T) {
	rt := testTransport(t, nil)
	wrote := make(chan struct{})
	s := startRaw(t, func(req *http.Request, _ *bufio.Reader, conn net.Conn) bool {
		if req.Header.Get("X-Req") == "1" {
			answerOK(req, conn, "{}")
			time.Sleep(20 * time.Millisecond)
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n\"stale\"")
			close(wrote)
			return true
		}
		return answerOK(req, conn, "second")
	})
	if _, _, err := postID(t.Context(), rt, s.url(), "1", []byte(upCallBody)); err != nil {
		t.Fatal(err)
	}
	<-wrote
	time.Sleep(20 * time.Millisecond)
	if _, got, err := postID(t.Context(), rt, s.url(), "2", []byte(upCallBody)); err != nil || string(got) != "second" {
		t.Errorf("next request: %q, %v; want its own answer", got, err)
	}
	if n := s.times("2"); n != 1 {
		t.Errorf("the upstream read the second request %d times", n)
	}
}

// TestUpstreamHeadBound: a response head past the transport's
// MaxResponseHeaderBytes is refused, 1xx heads counted in (the proxy
// sets no httptrace hook that would lift the bound for them); one within
// passes.
func TestUpstreamHeadBound(t *testing.T) {
	const bound = 4 << 10
	filler := func(n int) string { return "X-Fill: " + strings.Repeat("a", n) + "\r\n" }
	for _, c := range []struct {
		name, response string
		ok             bool
	}{
		{"within", "HTTP/1.1 200 OK\r\n" + filler(2000) + "Content-Length: 2\r\n\r\n{}", true},
		{"past", "HTTP/1.1 200 OK\r\n" + filler(bound) + "Content-Length: 2\r\n\r\n{}", false},
		{"many headers past", "HTTP/1.1 200 OK\r\n" + strings.Repeat(filler(10), bound/10) + "Content-Length: 2\r\n\r\n{}", false},
		{"1xx heads past", strings.Repeat("HTTP/1.1 103 Early Hints\r\n"+filler(1000)+"\r\n", 5) + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := testTransport(t, func(b *http.Transport) { b.MaxResponseHeaderBytes = bound })
			s := startRaw(t, func(req *http.Request, _ *bufio.Reader, conn net.Conn) bool {
				io.Copy(io.Discard, req.Body)
				io.WriteString(conn, c.response)
				return true
			})
			_, got, err := postID(t.Context(), rt, s.url(), "1", []byte(upCallBody))
			if c.ok && (err != nil || string(got) != "{}") {
				t.Errorf("got %q, %v; want {}", got, err)
			}
			if !c.ok && err == nil {
				t.Errorf("got %q; want the head refused", got)
			}
		})
	}
	// The bound as the proxy leaves it (0 is http.Transport's default,
	// 10 MiB) holds too.
	t.Run("past the proxy's bound", func(t *testing.T) {
		rt := testTransport(t, nil)
		limit := int(rt.MaxResponseHeaderBytes)
		if limit == 0 {
			limit = 10 << 20
		}
		s := startRaw(t, func(req *http.Request, _ *bufio.Reader, conn net.Conn) bool {
			io.Copy(io.Discard, req.Body)
			io.WriteString(conn, "HTTP/1.1 200 OK\r\n"+filler(limit)+"Content-Length: 2\r\n\r\n{}")
			return false
		})
		if _, got, err := postID(t.Context(), rt, s.url(), "1", []byte(upCallBody)); err == nil {
			t.Errorf("got %q; want the head refused", got)
		}
	})
}

// TestUpstreamReuse: connections are kept and reused, one request
// after another and several at once (under -race too), and not kept when
// a body was left unread or closed early, when the request asked to
// close, or past the idle timeout.
func TestUpstreamReuse(t *testing.T) {
	var conns atomic.Int32
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if n, _ := strconv.Atoi(r.URL.Query().Get("big")); n > 0 {
			w.Write(bytes.Repeat([]byte(" "), n))
		}
		w.Write(b)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	do := func(rt http.RoundTripper, query string, closeReq bool, read func(io.Reader) error) error {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/?"+query, strings.NewReader(upCallBody))
		req.Close = closeReq
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return read(resp.Body)
	}
	readAll := func(r io.Reader) error {
		b, err := io.ReadAll(r)
		if err == nil && !bytes.HasSuffix(b, []byte(upCallBody)) {
			err = fmt.Errorf("answered %q", b)
		}
		return err
	}
	readSome := func(r io.Reader) error { _, err := r.Read(make([]byte, 1)); return err }
	for _, c := range []struct {
		name     string
		run      func(rt http.RoundTripper) error
		min, max int32 // connections
	}{
		{"one after another", func(rt http.RoundTripper) error {
			for range 50 {
				if err := do(rt, "", false, readAll); err != nil {
					return err
				}
			}
			return nil
		}, 1, 1},
		{"8 at once", func(rt http.RoundTripper) error {
			errs := make(chan error, 8)
			for range 8 {
				go func() {
					for range 25 {
						if err := do(rt, "big=5000", false, readAll); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					return err
				}
			}
			return nil
		}, 1, 16},
		{"body closed early", func(rt http.RoundTripper) error {
			for range 3 {
				if err := do(rt, "big=100000", false, readSome); err != nil {
					return err
				}
			}
			return nil
		}, 3, 3},
		{"request asks to close", func(rt http.RoundTripper) error {
			for range 3 {
				if err := do(rt, "", true, readAll); err != nil {
					return err
				}
			}
			return nil
		}, 3, 3},
		{"read to the end without Close", func(rt http.RoundTripper) error {
			for range 3 {
				req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(upCallBody))
				resp, err := rt.RoundTrip(req)
				if err != nil {
					return err
				}
				if err := readAll(resp.Body); err != nil {
					return err
				}
			}
			return nil
		}, 1, 1},
		{"past the idle timeout", func(rt http.RoundTripper) error {
			for range 2 {
				if err := do(rt, "", false, readAll); err != nil {
					return err
				}
				time.Sleep(150 * time.Millisecond)
			}
			return nil
		}, 2, 2},
	} {
		tune := func(b *http.Transport) {
			if c.name == "past the idle timeout" {
				b.IdleConnTimeout = 100 * time.Millisecond
			}
		}
		t.Run(c.name, func(t *testing.T) {
			rt := testTransport(t, tune)
			before := conns.Load()
			if err := c.run(rt); err != nil {
				t.Fatal(err)
			}
			if n := conns.Load() - before; n < c.min || n > c.max {
				t.Errorf("%d new connections; want %d to %d", n, c.min, c.max)
			}
		})
	}
}

// TestUpstreamCancel: a request's context ending interrupts its
// write, its wait for the head and its body's read at once, and the
// caller gets the context's cause.
func TestUpstreamCancel(t *testing.T) {
	for _, c := range []struct {
		name  string
		serve func(req *http.Request, c net.Conn) // then stalls
		inRT  bool                                // RoundTrip waits (else the body's Read)
		big   bool                                // a body the upstream never reads
	}{
		{"waiting for the head", func(req *http.Request, c net.Conn) { io.Copy(io.Discard, req.Body) }, true, false},
		{"mid-head", func(req *http.Request, c net.Conn) {
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-")
		}, true, false},
		{"writing the request", func(req *http.Request, c net.Conn) {}, true, true},
		{"mid-body", func(req *http.Request, c net.Conn) {
			io.Copy(io.Discard, req.Body)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: ")
		}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := testTransport(t, nil)
			s := startRaw(t, func(req *http.Request, _ *bufio.Reader, conn net.Conn) bool {
				c.serve(req, conn)
				<-t.Context().Done()
				return false
			})
			body := []byte(upCallBody)
			if c.big {
				body = bytes.Repeat([]byte("x"), 64<<20)
			}
			cause := errors.New("the call was cancelled")
			ctx, cancel := context.WithCancelCause(t.Context())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url(), bytes.NewReader(body))
			var took time.Duration
			time.AfterFunc(100*time.Millisecond, func() { cancel(cause) })
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			if c.inRT {
				took = time.Since(start)
				if err == nil {
					resp.Body.Close()
					t.Fatal("RoundTrip returned a response; want the cancellation")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				_, err = io.ReadAll(resp.Body)
				took = time.Since(start)
				resp.Body.Close()
			}
			if took > 2*time.Second {
				t.Errorf("returned after %v", took)
			}
			if !errors.Is(err, cause) {
				t.Errorf("error %v; want the context's cause", err)
			}
		})
	}
}

// TestUpstreamBodyClose: a body's Close is safe at any time, more
// than once, and during a Read on another goroutine, which it ends.
func TestUpstreamBodyClose(t *testing.T) {
	rt := testTransport(t, nil)
	s := startRaw(t, func(req *http.Request, _ *bufio.Reader, conn net.Conn) bool {
		io.Copy(io.Discard, req.Body)
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		<-t.Context().Done()
		return false
	})
	req, _ := http.NewRequest(http.MethodPost, s.url(), strings.NewReader(upCallBody))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := resp.Body.Read(make([]byte, 10)); read <- err }()
	time.Sleep(50 * time.Millisecond)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { resp.Body.Close() })
	}
	wg.Wait()
	select {
	case err := <-read:
		if err == nil {
			t.Error("the Read returned no error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end the Read")
	}
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Error("a Read after Close returned no error")
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
}

// TestUpstreamStreams: an event stream's events reach the caller
// as they come, not once the stream ends.
func TestUpstreamStreams(t *testing.T) {
	next := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "event: message\ndata: 2\n\n")
	}))
	t.Cleanup(ts.Close)
	rt := testTransport(t, nil)
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(upCallBody))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var lines []string
	for range 3 {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	close(next)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"event: message\n", "data: 1\n", "\n"}, lines); diff != "" {
		t.Errorf("first event (-want +got):\n%s", diff)
	}
	if string(rest) != "event: message\ndata: 2\n\n" {
		t.Errorf("rest %q", rest)
	}
}

// TestUpstreamRefusesBadHeaders: a header that would let a value
// inject another header, or that is no header at all, is refused
// before a connection to the upstream is opened.
func TestUpstreamRefusesBadHeaders(t *testing.T) {
	for _, c := range []struct {
		name string
		k, v string
	}{
		{"newline in a value", "X-Token", "a\r\nX-Injected: 1"},
		{"NUL in a value", "X-Token", "a\x00b"},
		{"space in a name", "X Token", "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := testTransport(t, nil)
			s := startRaw(t, func(req *http.Request, _ *bufio.Reader, conn net.Conn) bool { return answerOK(req, conn, "{}") })
			req, _ := http.NewRequest(http.MethodPost, s.url(), strings.NewReader(upCallBody))
			req.Header[c.k] = []string{c.v}
			if resp, err := rt.RoundTrip(req); err == nil {
				resp.Body.Close()
				t.Error("sent")
			}
			if n := s.conns.Load(); n != 0 {
				t.Errorf("%d connections; want none", n)
			}
		})
	}
}

// closeCounter is a request body that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// TestUpstreamDialFails: an upstream that cannot be reached is
// the caller's error, and the request's body is closed as a RoundTripper
// must close it.
func TestUpstreamDialFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rt := testTransport(t, nil)
	body := &closeCounter{Reader: strings.NewReader(upCallBody)}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", body)
	req.ContentLength = int64(len(upCallBody))
	if resp, err := rt.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatal("no error")
	}
	if n := body.closed.Load(); n < 1 {
		t.Errorf("the body was closed %d times; want at least once", n)
	}
}

// TestUpstreamCancelUnreadBody: once a request's context ends,
// its connection is closed although nobody reads or closes the response
// body (a session that ended leaves its streams so): the upstream sees
// the close at once, and no descriptor waits for the body's garbage.
func TestUpstreamCancelUnreadBody(t *testing.T) {
	rt := testTransport(t, nil)
	closed := make(chan struct{})
	s := startRaw(t, func(req *http.Request, br *bufio.Reader, conn net.Conn) bool {
		io.Copy(io.Discard, req.Body)
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		br.ReadByte() // returns when the client closes
		close(closed)
		return false
	})
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url(), strings.NewReader(upCallBody))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("the connection stayed open after the context ended")
	}
}
