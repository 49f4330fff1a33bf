package redisledger

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// slowReplyConn is a connection to a real Redis which, once armed, delays
// the reply to the next reservation it sends (the first command naming
// the reserve function): the command reaches Redis and runs, and its
// reply arrives after the caller's deadline. Only that connection's read
// waits: a lease renewal sent meanwhile on another connection (the lease
// keeper renews at once when it starts) is not delayed instead.
type slowReplyConn struct {
	net.Conn
	armed *atomic.Bool
	delay time.Duration
	next  atomic.Bool // this connection's next read waits
}

func (c *slowReplyConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("_reserve")) && c.armed.CompareAndSwap(true, false) {
		c.next.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *slowReplyConn) Read(b []byte) (int, error) {
	if c.next.CompareAndSwap(true, false) {
		time.Sleep(c.delay)
	}
	return c.Conn.Read(b)
}

// TestReserveReplyLost: Redis makes the hold, but the reply comes after
// the caller's deadline (ContextTimeoutEnabled), so Reserve returns an
// error and the call is not made. Reserve releases the hold it may have
// made: the money is free at once, not a lease later. (Before, it stayed
// held for the whole lease.)
func TestReserveReplyLost(t *testing.T) {
	p := startRedis(t)
	var armed atomic.Bool
	c := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: []string{p.addr()}, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &slowReplyConn{Conn: conn, armed: &armed, delay: 300 * time.Millisecond}, nil
		},
	})
	t.Cleanup(func() { c.Close() })
	s, err := New(c, "lost-reply", &Options{Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	// Load the scripts and open a connection, so that the armed read is
	// the reply of the reserve script itself.
	if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: "warm", AmountUSD: "0"}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := s.Release(ctx, "warm"); err != nil {
		t.Fatal(err)
	}

	armed.Store(true)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	ok, _, err := s.Reserve(short, agent.Reservation{ID: "lost", AmountUSD: "0.5", LimitUSD: "1"})
	if ok || err == nil {
		t.Fatalf("Reserve whose reply came after the deadline: %v, %v; want an error", ok, err)
	}
	if armed.Load() {
		t.Fatal("the reply of the reserve script was never delayed: the test did not test anything")
	}
	// The release goes in the background, at once.
	var st agent.LedgerState
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err = newStore(t, p, "lost-reply", nil).State(ctx); err != nil {
			t.Fatal(err)
		}
		if st.Balance.ReservedUSD == "0" || time.Now().After(deadline) {
			break
		}
	}
	// The hold was made in Redis (the second call counts) and released.
	if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0", Calls: 2}, st.Balance); diff != "" {
		t.Errorf("after a Reserve whose reply was lost (-want +got):\n%s", diff)
	}
}
