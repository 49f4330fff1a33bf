package main

import (
	"sync"
	"time"
)

// net/http bounds each response with the write timeout: once a request's
// head is read it sets the connection's write deadline to now plus the
// timeout, and once the response is done it clears it. On a keep-alive
// connection serving small requests back to back, that is two updates of a
// runtime timer and three clock reads per request for a deadline that
// hardly moves. A trackedConn keeps the deadline its socket has and skips
// the two updates when they change nothing that matters:
//
//   - net/http's clear after a finished response (the handler has
//     returned, see responseStarted and responseDone) leaves the armed
//     deadline in place. No response is written while the connection waits
//     for its next request, and net/http sets a new deadline before the
//     next one is read; should the old one pass meanwhile, the next is
//     set as asked, since a passed deadline is never kept.
//   - A new deadline t is skipped when the armed one lies in
//     [t-writeSlack, t]: the socket keeps a deadline at most writeSlack
//     earlier than asked, never later. run sets writeSlack to a hundredth
//     of the write timeout (600 ms of the default 60 s), so the deadline
//     moves at most every writeSlack on a busy connection.
//
// Every other change (a later deadline, a clear by a handler that
// streams, any deadline set through SetDeadline) reaches the socket at once.
// The write timeout is thus never longer than configured and at most 1%
// shorter.
type writeDeadline struct {
	mu      sync.Mutex
	armed   time.Time // the socket's write deadline; zero for none
	handled bool      // a handler has returned and no request was read since
}

// SetWriteDeadline sets the write deadline as described on writeDeadline.
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	w := &c.wd
	w.mu.Lock()
	defer w.mu.Unlock()
	if slack := c.l.writeSlack; slack > 0 && !w.armed.IsZero() {
		if t.IsZero() && w.handled {
			return nil
		}
		if !t.IsZero() && !w.armed.After(t) && !w.armed.Before(t.Add(-slack)) {
			return nil
		}
	}
	err := c.Conn.SetWriteDeadline(t)
	if err == nil {
		w.armed = t
	} else {
		w.armed = time.Time{} // unknown: the next deadline is set as asked
	}
	return err
}

// SetDeadline sets both deadlines as asked (net/http uses it to clear them
// on a hijacked connection) and notes the write deadline.
func (c *trackedConn) SetDeadline(t time.Time) error {
	w := &c.wd
	w.mu.Lock()
	defer w.mu.Unlock()
	err := c.Conn.SetDeadline(t)
	w.armed = time.Time{}
	if err == nil {
		w.armed = t
	}
	return err
}

// responseStarted notes that a handler is running on the connection: a
// clear of the write deadline is set as asked until responseDone.
func (c *trackedConn) responseStarted() {
	c.wd.mu.Lock()
	c.wd.handled = false
	c.wd.mu.Unlock()
}

// responseDone notes that the handler has returned: net/http's clear of
// the write deadline that follows may be skipped.
func (c *trackedConn) responseDone() {
	c.wd.mu.Lock()
	c.wd.handled = true
	c.wd.mu.Unlock()
}
