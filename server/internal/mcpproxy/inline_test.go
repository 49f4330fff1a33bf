package mcpproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingBase counts the requests handed to the base transport.
type countingBase struct {
	n    atomic.Int64
	base http.RoundTripper
}

func (c *countingBase) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

// inlineServer serves h and counts the connections it accepted.
func inlineServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, &conns
}

func inlinePost(t *testing.T, c *http.Client, ctx context.Context, url, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestInlineTransport(t *testing.T) {
	ts, conns := inlineServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: " + string(b) + "\n\n"))
		w.(http.Flusher).Flush() // chunked, as an event stream is
		w.Write([]byte("data: end\n\n"))
	})
	base := &countingBase{base: http.DefaultTransport}
	c := &http.Client{Transport: newInlineTransport(base, 4)}

	// Sequential POSTs share one connection, and none goes to base.
	for i, body := range []string{"one", "two", "three"} {
		got, err := inlinePost(t, c, context.Background(), ts.URL, body)
		if want := "data: " + body + "\n\ndata: end\n\n"; err != nil || got != want {
			t.Fatalf("POST %d: %q %v, want %q", i, got, err, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for three POSTs in turn, want 1", n)
	}
	// The server drops its idle connections: the next POST is sent again
	// on a new one.
	ts.CloseClientConnections()
	if got, err := inlinePost(t, c, context.Background(), ts.URL, "four"); err != nil || !strings.Contains(got, "four") {
		t.Fatalf("POST after the server closed the kept connection: %q %v", got, err)
	}
	if n := base.n.Load(); n != 0 {
		t.Errorf("%d POSTs went to the base transport, want 0", n)
	}
	// A GET is base's.
	resp, err := c.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := base.n.Load(); n != 1 {
		t.Errorf("%d requests went to the base transport after a GET, want 1", n)
	}
}

func TestInlineTransportCancel(t *testing.T) {
	release := make(chan struct{})
	ts, conns := inlineServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: start\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	c := &http.Client{Transport: newInlineTransport(http.DefaultTransport, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := inlinePost(t, c, ctx, ts.URL, "x")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("reading a body whose context ended: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the read ended %v after the context", d)
	}
	// The connection went with the request: the next POST dials.
	close(release)
	if _, err := inlinePost(t, c, context.Background(), ts.URL, "y"); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (the cancelled one not kept)", n)
	}
}
