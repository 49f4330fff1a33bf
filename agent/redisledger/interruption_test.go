package redisledger

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/agentpreflight/preflight/agent"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// cutProxy forwards TCP to upstream. While cut, it closes every
// connection, open or new, at once: the worker sees Redis as unreachable.
type cutProxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func newCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, upstream: upstream, conns: make(map[net.Conn]bool)}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		// Registered only if still up: a cut that came while this
		// connection was dialled must close it too, or it would carry
		// calls through the outage.
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			u.Close()
			continue
		}
		p.conns[c], p.conns[u] = true, true
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); u.Close() }()
		go func() { _, _ = io.Copy(c, u); c.Close() }()
	}
}

// cut closes every connection and refuses new ones until mend.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *cutProxy) mend() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// TestHoldSurvivesInterruption: six workers hold money, their renewers
// spread over a third of the lease; Redis is unreachable for half a lease.
// A renewal that failed is retried at once, so every hold is renewed when
// Redis is back, before its lease runs out, whatever the renewer's phase.
// (With a retry a third of a lease later, the holds of the workers that had
// renewed just before the cut lapsed.)
func TestHoldSurvivesInterruption(t *testing.T) {
	p := startRedis(t)
	proxy := newCutProxy(t, p.addr())
	const lease, workers = 3 * time.Second, 6
	ctx := context.Background()
	for i := range workers {
		c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{proxy.addr()}, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		s, err := New(c, "interrupted", &Options{Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if ok, _, err := s.Reserve(ctx, agent.Reservation{ID: fmt.Sprint(i), AmountUSD: "0.1"}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		time.Sleep(lease / 3 / workers)
	}
	proxy.cut()
	time.Sleep(lease / 2)
	proxy.mend()
	time.Sleep(lease / 2) // every hold's lease would have run out by now
	st, err := newStore(t, p, "interrupted", nil).State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agent.Balance{SpentUSD: "0", ReservedUSD: "0.6", Calls: workers}, st.Balance); diff != "" {
		t.Errorf("after Redis was unreachable for half a lease (-want +got):\n%s", diff)
	}
}
