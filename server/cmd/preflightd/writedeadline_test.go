package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// deadlineConn records the write deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.set = append(c.set, t)
	return nil
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.set = append(c.set, t)
	return nil
}

// TestWriteDeadlineKept follows net/http's calls on a keep-alive
// connection and checks which reach the socket: a deadline at most
// writeSlack earlier than asked is kept, a later one is set, a clear is
// skipped only between a handler's return and the next request.
func TestWriteDeadlineKept(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	const timeout, slack = 60 * time.Second, 600 * time.Millisecond
	type step struct {
		what string
		at   time.Duration // when net/http reads the clock; -1: a clear
	}
	arm := func(at time.Duration) step { return step{"arm", at} }
	clear := step{"clear", -1}
	started, done := step{"started", 0}, step{"done", 0}
	setDL := func(at time.Duration) step { return step{"SetDeadline", at} }
	for _, tc := range []struct {
		name  string
		slack time.Duration
		steps []step
		want  []time.Duration // deadlines that reached the socket, as offsets from t0+timeout; -1: a clear
	}{
		{"busy keep-alive connection", slack,
			[]step{arm(0), started, done, clear, arm(time.Millisecond), started, done, clear, arm(slack), started, done, clear, arm(slack + time.Millisecond)},
			[]time.Duration{0, slack + time.Millisecond}},
		{"a later deadline is set at once", slack,
			[]step{arm(0), started, done, clear, arm(slack + 1)},
			[]time.Duration{0, slack + 1}},
		{"an earlier deadline is set at once", slack,
			[]step{arm(time.Second), started, done, clear, arm(0)},
			[]time.Duration{time.Second, 0}},
		{"a handler's clear is set", slack,
			[]step{arm(0), started, clear, done, clear},
			[]time.Duration{0, -1, -1}}, // the second clear changes nothing
		{"a clear before any handler ran is set", slack,
			[]step{arm(0), clear},
			[]time.Duration{0, -1}},
		{"a deadline passed while idle is set again", slack,
			[]step{arm(0), started, done, clear, arm(3 * timeout)},
			[]time.Duration{0, 3 * timeout}},
		{"SetDeadline reaches the socket and is noted", slack,
			[]step{arm(0), setDL(time.Hour), arm(0)},
			[]time.Duration{0, time.Hour, 0}},
		{"no slack: every call is set", 0,
			[]step{arm(0), started, done, clear, arm(time.Millisecond)},
			[]time.Duration{0, -1, time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc := &deadlineConn{}
			c := &trackedConn{framedConn: framedConn{Conn: dc}, l: &connLimiter{writeSlack: tc.slack}}
			for _, s := range tc.steps {
				switch s.what {
				case "arm":
					c.SetWriteDeadline(t0.Add(s.at + timeout))
				case "clear":
					c.SetWriteDeadline(time.Time{})
				case "started":
					c.responseStarted()
				case "done":
					c.responseDone()
				case "SetDeadline":
					c.SetDeadline(t0.Add(s.at + timeout))
				}
			}
			var got []time.Duration
			for _, d := range dc.set {
				if d.IsZero() {
					got = append(got, -1)
				} else {
					got = append(got, d.Sub(t0.Add(timeout)))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("deadlines set on the socket (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWriteTimeoutAfterKeptDeadlines: on a keep-alive connection whose
// write deadline was kept across requests, a response that the client does
// not read still fails within the write timeout (plus the slack), and one
// answered after an idle pause longer than the timeout is delivered.
func TestWriteTimeoutAfterKeptDeadlines(t *testing.T) {
	const timeout = 300 * time.Millisecond
	big := strings.Repeat("x", 64<<20) // far more than the socket buffers hold
	type outcome struct {
		err  error
		took time.Duration
	}
	failed := make(chan outcome, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			start := time.Now()
			_, err := io.WriteString(w, big)
			failed <- outcome{err, time.Since(start)}
			return
		}
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "{}")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := newConnLimiter(ln, 16, 5*time.Second, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	cl.writeSlack = timeout / 100
	srv := &http.Server{Handler: rejectAmbiguousFraming(h), WriteTimeout: timeout, ConnState: cl.connState, ConnContext: connContext}
	go srv.Serve(cl)
	defer srv.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	small := func() {
		t.Helper()
		fmt.Fprintf(c, "GET /small HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 20 {
		small() // back to back: the deadline is kept
	}
	time.Sleep(timeout + 100*time.Millisecond) // the kept deadline passes while idle
	small()
	fmt.Fprintf(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n") // never read
	select {
	case o := <-failed:
		if o.err == nil || o.took > timeout+time.Second {
			t.Errorf("the unread response's write ended with %v after %v; want a failure within the %v write timeout", o.err, o.took, timeout)
		}
	case <-time.After(timeout + 5*time.Second):
		t.Fatal("the write of an unread response did not fail within the write timeout")
	}
}
